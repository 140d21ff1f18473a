// ClusterMember: the training side of a latentd node in cluster mode
// (docs/design.md, "Many nodes"). It owns the node's ClusterLink and the
// SyncedTopicTable over its Trainer's table: joining (Join), the hooks
// around each sweep (BeforeSweep; the link's EndSweep and AnnounceSweep),
// adding merged counts and words brought by other nodes to the
// synchronized table (ApplyMerge, AdoptWords, GrowTable), finishing, and
// leaving when an operator removes the node (Leave, with hand-off of its
// documents to the others: cluster_member_handoff.cc).
//
// It does not own the Trainer or the Vocabulary: the service passes them
// to each call, holding its training lock. It hands the link to the
// ClusterRouter once joined, which API threads read it through.
//
// Thread-safety: Join from the thread that owns the service, before the
// training thread starts; every other method from the training thread (or
// with the service's training lock held), except finished(), which any
// thread may call.
#ifndef LATENTD_SERVICE_CLUSTER_MEMBER_H_
#define LATENTD_SERVICE_CLUSTER_MEMBER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/vocabulary.h"
#include "sampler/synced_table.h"
#include "sampler/trainer.h"
#include "service/cluster/cluster_link.h"
#include "service/cluster_router.h"
#include "service/metrics.h"
#include "service/store_merge.h"

namespace latentd::service {

struct ClusterMemberOptions {
  std::string data_dir;  // holds cluster.address, the sync address kept
  // Copies of each key's state (ServiceOptions::replicas).
  uint32_t replicas = 1;
  // Documents per hand-off request (ServiceOptions::
  // max_documents_per_ingest, at most 1000).
  size_t max_documents_per_ingest = 1000;
  // Called (training thread) once the node has left the cluster, and once
  // the cluster has declared this live node down (ServiceOptions).
  std::function<void()> on_left_cluster;
  std::function<void()> on_declared_down;
  // Called (training thread) once this node's removal was rolled back
  // (its hand-off failed): the ring has it active again (ServiceOptions).
  std::function<void()> on_removal_rolled_back;
  // Counts the words adopted from other nodes; may be null.
  Counter* words_adopted = nullptr;
};

class ClusterMember {
 public:
  // `router` must outlive this object.
  ClusterMember(ClusterMemberOptions options, ClusterRouter* router);
  ~ClusterMember();
  ClusterMember(const ClusterMember&) = delete;
  ClusterMember& operator=(const ClusterMember&) = delete;

  // Joins the cluster through a ClusterLink built from `options` over
  // `trainer`'s table, whose words are `vocab`'s (see LatentdService::
  // JoinCluster). Blocks until the table holds the global counts, then
  // gives the link to the router. On failure the table and the trainer's
  // pipeline are as before. REQUIRES: not joined; no sweep running.
  absl::Status Join(ClusterLinkOptions options, Trainer* trainer,
                    const Vocabulary& vocab);
  bool joined() const { return link_ != nullptr; }
  // The link once joined, else nullptr.
  ClusterLink* link() const { return link_.get(); }

  // Before sweep *t (set here: the cluster's next): waits as the link's
  // consistency says (ClusterLink::BeforeSweep: kCancelled once a drain is
  // requested or give_up() says stop). kFailedPrecondition once the node
  // stopped sampling (a failed sweep, or declared down: then marked failed
  // in the router and options.on_declared_down called).
  absl::Status BeforeSweep(uint64_t* t, const std::function<bool()>& give_up);
  // Adds merged tokens' counts to the synchronized table (no rebuild: the
  // table also holds the other nodes' counts).
  absl::Status ApplyMerge(Trainer* trainer, const MergeResult& merged);
  // Adds the words the owners sent that `vocab` lacks to it, then grows
  // the table (GrowTable). Returns how many were added (0 unless joined and
  // not leaving).
  absl::StatusOr<size_t> AdoptWords(Trainer* trainer, Vocabulary* vocab);
  // Grows the table to `vocab` (new words: empty rows) and makes the new
  // words keys of the synchronized table, routed to their owners
  // (ClusterLink::GrowKeys).
  absl::Status GrowTable(Trainer* trainer, const Vocabulary& vocab);

  // True when Leave() is to be called: joined, a removal of this node is
  // in effect (ClusterLink::LeaveRequested), and Leave() has not run since,
  // or its committed hand-off did not finish (it is tried again), or its
  // hand-off failed and the removal was retried.
  bool LeaveDue() const;
  // The operator removes this node (ClusterLink::LeaveRequested): with
  // handoff, first ships its documents to the others (HandOffDocuments:
  // staged there, then committed; if that fails before the commit, the
  // removal is rolled back, the ring has this node active again, the
  // receivers drop what they staged, and options.on_removal_rolled_back
  // restarts it, or it stays, not sampling, until restarted; once
  // committed, a failure leaves everything here and Leave() is due again);
  // then takes
  // its documents' counts out of the model, leaves the ring, and calls
  // options.on_left_cluster. Marks the router left first, whatever
  // happens.
  absl::Status Leave(Trainer* trainer, const Vocabulary& vocab);

  // Drain (sync/control/drain.h): whether the cluster asks its members to
  // pause sampling and settle. DrainStep, while it does: one pass pushing
  // and pulling every change, what it brought applied to `trainer`'s
  // table. Once a pass finds nothing to send or receive and the table is
  // as at the step before (which the caller has published since), its
  // checksum (its words by key, and the topic totals) goes in this node's
  // heartbeat. Returns whether the table may have changed.
  bool drain_requested() const;
  absl::StatusOr<bool> DrainStep(Trainer* trainer, const Vocabulary& vocab);
  // Sampling ended here: stops holding back SSP peers (once).
  void Finish();
  bool finished() const { return finished_.load(); }
  // Counts from the owners not yet in the table / applies them.
  bool HasPending() const { return synced_->HasPending(); }
  absl::Status ApplyPending() { return synced_->ApplyPending(); }
  // Finish(), stops the link, and applies what the owners sent last; the
  // error of applying it.
  absl::Status Stop();

 private:
  // Sends every document of `trainer`'s store with its topics to the
  // remaining members (the owner, in the ring without this node, of the
  // document's source key, or of its user's key), as Ingest calls with
  // words and topics, which they stage; retried until the link's join
  // timeout. Then commits the hand-off in Redis (ClusterLink::
  // CommitHandoff), tells each receiver (they take the staged documents
  // in), and waits (as long) until each has merged them into its store.
  // *committed says whether the commit was made: an error before it
  // leaves nothing counted at the receivers (the hand-off can be rolled
  // back); after it, a receiver that did not take its share in by the
  // deadline is an error too (this node must keep its counts until then:
  // what is only staged has no copies yet), and Leave() tries again.
  absl::Status HandOffDocuments(Trainer* trainer, const Vocabulary& vocab,
                                bool* committed);
  // Leave()'s failed hand-off, not committed: rolls the removal back
  // (ClusterLink::RollBackLeave) and restarts this node, or, if that
  // fails, marks the removal failed. Returns `why`.
  absl::Status RollBackLeave(absl::Status why);

  const ClusterMemberOptions options_;
  ClusterRouter* const router_;
  // Set by Join, then only read.
  std::unique_ptr<SyncedTopicTable> synced_;  // over the trainer's table
  std::unique_ptr<ClusterLink> link_;
  std::atomic<bool> finished_{false};
  // Leave() ran and may not run again (see LeaveDue).
  bool leave_started_ = false;
  // Keys whose name does not hash to them (a peer's error), warned once.
  absl::flat_hash_set<sync::Key> misnamed_;
  // The table's checksum at the last DrainStep (0: none since sampling).
  uint64_t drain_checksum_ = 0;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_CLUSTER_MEMBER_H_
