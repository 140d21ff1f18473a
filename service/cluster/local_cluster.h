// LocalCluster: several ClusterNodes in one process, talking over loopback
// TCP, with a private redis-server — what the cluster tests and the cluster
// benchmark run. Everything listens on 127.0.0.1 only.
//
// Thread-safety: not thread-safe; one thread drives a LocalCluster (each
// node samples on its own thread inside RunSweeps).
#ifndef LATENTD_SERVICE_CLUSTER_LOCAL_CLUSTER_H_
#define LATENTD_SERVICE_CLUSTER_LOCAL_CLUSTER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "service/cluster/cluster_node.h"

namespace latentd {

// A redis-server child process on 127.0.0.1 and a free port, no
// persistence. Stopped (SIGTERM, then reaped) on destruction.
class RedisProcess {
 public:
  // kUnavailable if redis-server cannot be started or does not answer
  // within 5 s.
  static absl::StatusOr<std::unique_ptr<RedisProcess>> Start(
      const std::string& binary = "redis-server");
  ~RedisProcess();
  std::string url() const;
  int port() const { return port_; }
  // Stops the server (SIGKILL: everything it held is gone) and reaps it.
  void Kill();
  // Starts it again, empty, on the same port (after Kill). Same errors as
  // Start.
  absl::Status Restart();

 private:
  RedisProcess() = default;
  // Runs redis-server on port_ and waits until it answers.
  absl::Status Launch();
  std::string binary_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// A TCP port that nothing holds on 127.0.0.1, for a process the caller
// starts to listen on: drawn at random below the kernel's ephemeral range,
// so that no other socket's bind to port 0 can take it meanwhile, and
// never the same port twice in one process. Thread-safe.
absl::StatusOr<int> PickFreePort();

struct LocalClusterRun {
  std::vector<std::vector<NodeSweepReport>> reports;  // [node][sweep]
  double seconds = 0;                                 // wall, all sweeps
  uint64_t tokens_sampled = 0;                        // all nodes, sweeps
};

class LocalCluster {
 public:
  // Starts `nodes` nodes from `base` (node i gets shard i of `nodes`,
  // node id "node<i>", cluster `base.cluster`), all joined.
  // "{node}" in base.tls's file names becomes the node id (per-node
  // certificates).
  // slow_down[i], if given, overrides base.slow_down for node i.
  // With `shards` > nodes, node i gets shard i of `shards` and the other
  // shards are left for nodes that join later (Add).
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(
      const ClusterNodeOptions& base, int nodes,
      std::vector<absl::Duration> slow_down = {}, int shards = 0);
  // Takes a node that joined the running cluster (options.join), so that
  // Drain, total_tokens and the destructor count it.
  void Add(std::unique_ptr<ClusterNode> node) {
    nodes_.push_back(std::move(node));
  }
  // Gives up node i (one that left the cluster).
  std::unique_ptr<ClusterNode> Remove(size_t i) {
    std::unique_ptr<ClusterNode> n = std::move(nodes_[i]);
    nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(i));
    return n;
  }
  ~LocalCluster();

  // Every node runs `sweeps` sweeps on its own thread, then Finish().
  absl::StatusOr<LocalClusterRun> RunSweeps(int sweeps);
  // Waits (up to 30 s) until every node's key hand-offs have been taken,
  // then drain passes, one node after another, until a round in which
  // every node's pass was quiet; returns the number of rounds, or
  // kDeadlineExceeded.
  absl::StatusOr<int> Drain(int max_rounds = 50);
  // After Drain: joint log p(w, z) per token from the owners' globals and
  // each node's document part of its last sweep.
  double LogLikelihoodPerToken(const LocalClusterRun& run) const;

  std::vector<std::unique_ptr<ClusterNode>>& nodes() { return nodes_; }
  uint64_t total_tokens() const;

 private:
  LocalCluster() = default;
  std::vector<std::unique_ptr<ClusterNode>> nodes_;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_LOCAL_CLUSTER_H_
