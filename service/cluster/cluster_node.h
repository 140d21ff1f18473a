// ClusterNode: one node of a training cluster over a corpus shard, for
// tests, benchmarks and latentd-cluster-node — the sampling pipeline over
// this node's shard (in memory) plus its ClusterLink (sync server, owner
// shard, synchronizer, consistency, membership; service/cluster/
// cluster_link.h). The daemon, latentd, is a cluster member through the
// same link (service/latentd_service.h, cluster mode).
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

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "corpora/document_reader.h"
#include "corpora/token_store.h"
#include "corpora/types.h"
#include "sampler/sweep_pipeline.h"
#include "sampler/synced_table.h"
#include "sampler/topic_table.h"
#include "service/cluster/cluster_link.h"
#include "sync/owner_shard.h"
#include "sync/synchronizer.h"

namespace latentd {

// How the nodes of a cluster split one corpus file between them.
enum class ShardBy {
  // Document i of the file (0-based position) belongs to shard
  // i % num_shards: exactly balanced, but tied to the file's order.
  kIndex,
  // A document belongs to the shard its id hashes to (RawDocument::id:
  // the doc-id of a yahoo or UCI file, the path under a directory, the
  // line number of lines and LDA-C files): the same document lands on the
  // same shard whatever file or order it comes in.
  kId,
};

// The shard (< num_shards) of the document at `index` with id `id`.
// REQUIRES: num_shards > 0. Pure; thread-safe.
uint32_t DocumentShard(ShardBy by, uint64_t index, std::string_view id,
                       uint32_t num_shards);

// The link's settings (membership, sync) plus the shard, model and test
// hooks.
struct ClusterNodeOptions : ClusterLinkOptions {
  // ---- Corpus: of the file's first max_docs documents, this node trains
  // on those DocumentShard(shard_by, ...) puts in `shard`. ----
  ReaderOptions corpus;
  uint32_t shard = 0;
  uint32_t num_shards = 1;
  ShardBy shard_by = ShardBy::kIndex;
  uint64_t max_docs = 0;  // 0 = all

  // ---- Model ----
  TopicId num_topics = 20;
  double alpha = 0;  // symmetric α; 0 = 50/K (fixed)
  double beta = 0.01;
  uint64_t seed = 1;
  int threads = 1;  // sampler threads

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
  double wait_seconds = 0;  // SSP waits and flushes
  // This shard's log p(z | α), if the sweep was asked to evaluate (else 0).
  double doc_log_likelihood = 0;
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
  // `evaluate` also computes the report's doc_log_likelihood, which costs
  // lgamma calls per document (about 5% of a sweep's CPU): ask for it on
  // the sweeps whose likelihood is wanted.
  absl::StatusOr<NodeSweepReport> Sweep(bool evaluate = true);
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

  // The removal an operator started for this node (`latentctl cluster
  // remove-node`), once the ring has reached its drain epoch: its mode.
  std::optional<sync::RemoveMode> LeaveRequested() const {
    return link_->LeaveRequested();
  }
  // Leaves the cluster as the removal asks, then Stop(). With drop, this
  // node's documents' counts are first taken out of the model (negative
  // deltas through the table's writer, pushed like any change). Handoff
  // (shipping the documents to the remaining nodes) is not built for
  // ClusterNode: kUnimplemented, nothing changed. REQUIRES:
  // LeaveRequested(), no sweep running and none to come.
  absl::Status Leave();

  const std::string& node_id() const { return link_->node_id(); }
  const std::string& address() const { return link_->address(); }
  uint64_t sweep() const { return link_->sweep(); }
  uint64_t tokens() const { return tokens_; }
  uint64_t global_vocab_size() const { return global_vocab_; }
  const sync::SyncCounters& counters() const { return link_->counters(); }
  const sync::OwnerShard& owner() const { return link_->owner(); }
  const ClusterLink& link() const { return *link_; }
  // REQUIRES (both): no sweep running.
  const SyncedTopicTable& synced_table() const { return *synced_; }
  const TopicTable& table() const { return *table_; }
  // Peers the heartbeats currently find unreachable.
  std::vector<std::string> UnavailablePeers() const {
    return link_->UnavailablePeers();
  }
  // A copy: the ring may move to a new epoch at any time.
  hashring::RingConfig ring_config() const { return link_->ring_config(); }
  uint64_t epoch() const { return link_->epoch(); }
  // Key hand-offs of past ring epochs not yet taken by their new owners.
  size_t pending_handoffs() const { return link_->pending_handoffs(); }
  bool ring_changing() const { return link_->ring_changing(); }
  // This node's own documents' counts (its store's assignments), keyed by
  // word key (and sync::kTopicTotalsKey for the totals): what the node
  // contributes to the global model. REQUIRES: no sweep running.
  absl::StatusOr<std::vector<std::pair<sync::Key, sync::SparseVector>>>
  OwnCounts() const;
  // Owner-side part of the joint log-likelihood over the keys this node
  // owns: Σ_w Σ_k [lnΓ(g_wk+β) − lnΓ(β)], plus, if it owns the topic
  // totals, Σ_k [lnΓ(Vβ) − lnΓ(n_k+Vβ)] with V = global_vocab_size().
  double OwnedWordLogLikelihood() const;

 private:
  absl::StatusOr<NodeSweepReport> SweepOnce(bool evaluate);
  ClusterNode() = default;
  absl::Status Load();

  ClusterNodeOptions options_;
  uint64_t global_vocab_ = 0;
  uint64_t tokens_ = 0;
  std::unique_ptr<TokenStore> store_;
  std::vector<sync::Key> word_keys_;
  std::unique_ptr<TopicTable> table_;
  std::unique_ptr<SyncedTopicTable> synced_;
  std::unique_ptr<SweepPipeline> pipeline_;
  std::unique_ptr<ClusterLink> link_;
  std::vector<double> alpha_;
  absl::Status failed_;  // the first failed sweep's error (Sweep's thread)
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_CLUSTER_NODE_H_
