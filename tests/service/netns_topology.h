// NetTopology: a private network of Linux network namespaces for the
// network-fault tests (daemon_netfault_test.cc), in which links can be cut
// and healed while processes run.
//
// Shape: one namespace per endpoint (Redis and nodes 0..N-1), and every
// pair of endpoints joined by a link of its own: a veth from each endpoint
// to a bridge (one per link) in a "switch" namespace. An endpoint has one
// address (10.213.0.2 for Redis, 10.213.0.10+i for node i), set on each of
// its links with the peer's address as a /32 route, so a packet to a peer
// takes only that pair's link. Cut(a, b) sets the link's two switch ports
// down: both endpoints lose carrier and every packet between them is
// dropped silently in both directions, as in a real partition (no reset,
// no ICMP; connections time out). The test process itself moves into a
// namespace of its own with a link to each node that is never cut (the
// "clients": API calls, latentctl); it reaches Redis over its Unix socket.
// Nothing is routed: no traffic leaves loopback and these namespaces.
//
// The namespaces are named lt<pid>-*; the destructor deletes them, and
// Create() first deletes those of processes that no longer run.
//
// Thread safety: none; use it from the test's main thread.
#ifndef LATENTD_TESTS_SERVICE_NETNS_TOPOLOGY_H_
#define LATENTD_TESTS_SERVICE_NETNS_TOPOLOGY_H_

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd::testing {

class NetTopology {
 public:
  // The Redis endpoint; nodes are 0..nodes-1.
  static constexpr int kRedis = -1;

  // Why no topology can be built here ("" if one can): not root, no `ip`,
  // or `ip netns add` refused. Creates and deletes one probe namespace.
  static std::string Unavailable();

  // Moves the calling thread into a fresh network namespace (threads it
  // starts later follow it; call it from the main thread before any other
  // runs), then builds the namespaces and links for Redis and `nodes`
  // nodes, every link up. An error names the command that failed.
  static absl::StatusOr<std::unique_ptr<NetTopology>> Create(int nodes);

  NetTopology(const NetTopology&) = delete;
  NetTopology& operator=(const NetTopology&) = delete;
  ~NetTopology();

  int nodes() const { return nodes_; }
  // The endpoint's address ("10.213.0.10").
  std::string Address(int endpoint) const;
  // The command prefix that runs a program in the endpoint's namespace.
  std::vector<std::string> Exec(int endpoint) const;

  // Cuts or heals the link between endpoints a and b (a != b). Cutting a
  // cut link or healing a healed one is a no-op.
  absl::Status Cut(int a, int b);
  absl::Status Heal(int a, int b);
  // Heals every cut link.
  absl::Status HealAll();
  bool IsCut(int a, int b) const;
  // The cut links, as (min, max) pairs.
  const std::set<std::pair<int, int>>& cut() const { return cut_; }

 private:
  NetTopology(std::string prefix, int nodes)
      : prefix_(std::move(prefix)), nodes_(nodes) {}
  std::string Namespace(int endpoint) const;
  absl::Status Build();
  absl::Status SetLink(int a, int b, bool up);

  const std::string prefix_;  // "lt<pid>"
  const int nodes_;
  std::vector<std::string> created_;  // namespaces to delete
  std::set<std::pair<int, int>> cut_;
};

// The short name of an endpoint in messages: "redis" or "n<i>".
std::string EndpointName(int endpoint);

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_NETNS_TOPOLOGY_H_
