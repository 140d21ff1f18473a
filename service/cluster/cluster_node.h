// ClusterNode: one latentd node of a training cluster — the sampling
// pipeline over this node's corpus shard, the synchronizer (client side),
// this node's owner shard (server side), consistency control and Redis
// membership, composed (DESIGN.md, "Many nodes").
//
//   auto node = ClusterNode::Create(options);   // loads the shard, listens,
//                                               // joins, waits for the ring
//   for (...) node->Sweep();                    // sync runs in background
//   node->Finish();                             // pushes, no longer holds
//   node->WaitAllFinished(timeout);             // globals are now final
//   node->DrainPass();                          // pulls them: exact
//
// Thread-safety: Sweep, Finish, DrainPass and Stop are called by one thread;
// the accessors are thread-safe unless noted.
#ifndef LATENTD_SERVICE_CLUSTER_CLUSTER_NODE_H_
#define LATENTD_SERVICE_CLUSTER_CLUSTER_NODE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "corpora/document_reader.h"
#include "corpora/token_store.h"
#include "corpora/types.h"
#include "sampler/sweep_pipeline.h"
#include "sampler/synced_table.h"
#include "sampler/topic_table.h"
#include "sync/consistency.h"
#include "sync/membership.h"
#include "sync/owner_shard.h"
#include "sync/synchronizer.h"
#include "sync/transport.h"

namespace latentd {

struct ClusterNodeOptions {
  // ---- Membership ----
  std::string redis_url = "redis://127.0.0.1:6379";
  std::string cluster = "default";
  std::string listen = "127.0.0.1:0";  // port 0: pick a free one
  std::string node_id;                 // "" = the address listened on
  uint32_t expected_members = 1;       // the ring is fixed with this many
  absl::Duration join_timeout = absl::Seconds(60);

  // ---- Corpus: document i of the file (0-based, i < max_docs) belongs to
  // shard i % num_shards. ----
  ReaderOptions corpus;
  uint32_t shard = 0;
  uint32_t num_shards = 1;
  uint64_t max_docs = 0;  // 0 = all

  // ---- Model ----
  TopicId num_topics = 20;
  double alpha = 0;  // symmetric α; 0 = 50/K (fixed)
  double beta = 0.01;
  uint64_t seed = 1;
  int threads = 1;  // sampler threads

  // ---- Sync ----
  sync::Consistency consistency;
  size_t round_byte_budget = 0;  // see SynchronizerOptions
  // Under async too, end each sweep with one round to every owner (push
  // this sweep's deltas, pull the others'; incremental: O(changed keys))
  // and wait for the replies. Not a barrier: it never waits for other
  // nodes' progress. If false (the default), the end of a sweep only kicks
  // a round and sampling goes on at once: with rounds paced by work (below)
  // the log-likelihood is the same either way (ops/bench/cluster_bench.sh).
  // (The 4-7% drift once seen without it came from the old fixed 10 ms
  // rounds that each visited every key: on an oversubscribed machine they
  // fell behind, so nodes sampled whole sweeps between rounds.)
  // SSP/BSP always flush.
  bool flush_each_sweep = false;
  // Background rounds are paced by work, not by a timer: the count updater
  // starts one every 1/rounds_per_sweep of a sweep's batches (counted in
  // the previous sweep; 0 = timer only). A round costs O(keys changed
  // since the previous one), so fewer rounds per sweep cost less sync CPU
  // per token but let the nodes' counts be staler (the log-likelihood per
  // sweep falls behind the single node's).
  int rounds_per_sweep = 4;
  // Rounds within a sweep send only the keys that changed by at least this
  // much here (Σ|Δn_wk| since their last round); the round that ends the
  // sweep sends every changed key. 0 = every changed key every round.
  uint32_t min_key_weight = 8;
  // Whatever the work, a round at most this long after the previous one.
  absl::Duration round_interval = absl::Milliseconds(500);
  absl::Duration call_timeout = absl::Seconds(2);
  // A peer unreachable this long stops counting for SSP, and is reported.
  absl::Duration dead_after = absl::Seconds(3);
  absl::Duration heartbeat = absl::Milliseconds(200);
  sync::LogFn log = sync::LogToStderr;

  // ---- Testing ----
  absl::Duration slow_down = absl::ZeroDuration();  // sleep after a sweep
  // Called as a sweep begins (after any SSP wait), with the node id and
  // the 1-based sweep number.
  std::function<void(const std::string& node, uint64_t sweep)> on_sweep_start;
  // Called when a sweep is done (and, under SSP, flushed), before the node
  // tells anyone its new clock.
  std::function<void(const std::string& node, uint64_t sweep)> on_sweep_end;
};

struct NodeSweepReport {
  uint64_t sweep = 0;
  uint64_t tokens = 0;
  double seconds = 0;  // sampling only
  // CPU time of the calling thread while sampling (with one sampler
  // thread, the pipeline runs on it): seconds − cpu_seconds is time the
  // sampler was runnable but off-CPU, or blocked.
  double cpu_seconds = 0;
  double wait_seconds = 0;        // SSP waits and flushes
  double doc_log_likelihood = 0;  // this shard's log p(z | α)
};

class ClusterNode {
 public:
  // Loads the shard, starts the server, joins the cluster (blocks until
  // the ring is fixed) and starts the synchronizer.
  static absl::StatusOr<std::unique_ptr<ClusterNode>> Create(
      ClusterNodeOptions options);
  ~ClusterNode();  // Stop()

  // One sweep under the consistency setting (SSP may first wait for the
  // slowest live node). kUnavailable never: dead peers are skipped. A failed
  // sweep (a damaged store, a rejected correction) leaves the table out of
  // step with the store and with what the owners have been sent, so the
  // node cannot resample safely: every later Sweep() returns
  // kFailedPrecondition with the first error, and the node should Stop().
  absl::StatusOr<NodeSweepReport> Sweep();
  // Pushes this node's remaining deltas, then announces that it samples no
  // more (it stops counting for SSP).
  void Finish();
  // Waits until every live node has finished; false on timeout.
  bool WaitAllFinished(absl::Duration timeout);

  // With sampling over everywhere: one full sync pass, then the queued
  // corrections are applied. Nodes are drained when, in a row of passes
  // run one node after another, every node's pass is quiet.
  sync::Synchronizer::PassResult DrainPass();

  // Stops the synchronizer, heartbeats and server. Idempotent.
  void Stop();

  const std::string& node_id() const { return node_id_; }
  const std::string& address() const { return address_; }
  uint64_t sweep() const { return sweep_; }
  uint64_t tokens() const { return tokens_; }
  uint64_t global_vocab_size() const { return global_vocab_; }
  const sync::SyncCounters& counters() const { return sync_->counters(); }
  const sync::OwnerShard& owner() const { return *owner_; }
  // REQUIRES (both): no sweep running.
  const SyncedTopicTable& synced_table() const { return *synced_; }
  const TopicTable& table() const { return *table_; }
  // Peers the heartbeats currently find unreachable.
  std::vector<std::string> UnavailablePeers() const;
  const hashring::RingConfig& ring_config() const { return ring_config_; }
  // Owner-side part of the joint log-likelihood over the keys this node
  // owns: Σ_w Σ_k [lnΓ(g_wk+β) − lnΓ(β)], plus, if it owns the topic
  // totals, Σ_k [lnΓ(Vβ) − lnΓ(n_k+Vβ)] with V = global_vocab_size().
  double OwnedWordLogLikelihood() const;

 private:
  absl::StatusOr<NodeSweepReport> SweepOnce();
  ClusterNode() = default;
  absl::Status Load();
  absl::Status StartServer();
  absl::Status Join();
  void HandleFrame(sync::Frame request, sync::Responder responder);
  void HeartbeatLoop();
  struct Peer;
  void OnHeartbeatReply(Peer* peer, const absl::Status& status);

  ClusterNodeOptions options_;
  std::string node_id_;
  std::string address_;
  uint64_t global_vocab_ = 0;
  uint64_t tokens_ = 0;
  std::unique_ptr<TokenStore> store_;
  std::vector<sync::Key> word_keys_;
  std::unique_ptr<TopicTable> table_;
  std::unique_ptr<SyncedTopicTable> synced_;
  std::unique_ptr<SweepPipeline> pipeline_;
  std::unique_ptr<sync::OwnerShard> owner_;
  std::unique_ptr<sync::ClockTable> clocks_;
  hashring::RingConfig ring_config_;
  std::unique_ptr<sync::EventLoop> loop_;
  std::unique_ptr<sync::Server> server_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::unique_ptr<sync::Synchronizer> sync_;
  std::vector<double> alpha_;
  std::atomic<uint64_t> sweep_{0};
  absl::Status failed_;  // the first failed sweep's error (Sweep's thread)
  std::atomic<bool> finished_{false};
  std::atomic<bool> ready_{false};
  // Count-updater pacing of rounds (see rounds_per_sweep).
  std::atomic<uint64_t> kick_every_{0};
  uint64_t batches_since_kick_ = 0;  // count updater only

  mutable absl::Mutex hb_mu_;
  bool hb_stop_ ABSL_GUARDED_BY(hb_mu_) = false;
  uint64_t hb_kick_ ABSL_GUARDED_BY(hb_mu_) = 0;
  std::thread heartbeat_;
  bool stopped_ = false;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_CLUSTER_NODE_H_
