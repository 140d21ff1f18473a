// IngestPath: how a latentd node takes documents in, up to the merge
// (docs/design.md, "Ingestion"). It owns the node's ingest log (DIR/
// ingest.log, service/ingest_log.h) and the queue of acknowledged records
// not merged yet, drops redeliveries by source, forwards users' events to
// their owners and copies each record to its backups (replicated ingestion,
// DIR/replicas, service/replica_logs.h) through a ClusterRouter, and in
// cluster mode runs the replica thread that adopts the copies of a node
// removed as lost, and settles staged hand-offs. Merging the queue into the
// token store is the training thread's: it takes the records (PendingAfter),
// and once a view shows them drops them here (Published).
//
// Documents handed off by a leaving node (remove-node --handoff; their
// sources name the attempt, service/handoff_source.h) are staged, not
// queued: appended durably to DIR/handoff/, one log per attempt, and
// acknowledged, but neither copied nor merged until the attempt is
// committed (CommitHandoff, then they take the path of any document) or
// dropped when it is rolled back. The background thread settles the
// attempts that are decided in Redis meanwhile (ingest_handoff.cc).
//
// Life cycle: construct, Open (replays the log), Start (the replica
// thread), BeginStop (wakes the waiters), Stop (joins it). The router must
// outlive this object.
//
// Thread-safety: Ingest, SourceIngested, CopiedEvents and
// the accessors may be called from any thread at once; PendingAfter,
// Published, Compact and WaitForWork by the training thread; Open, Start,
// SetCluster, BeginStop and Stop from the thread that owns the service.
// Locks: pending_mu_ (the queue, the sources and the stop and leave flags;
// held across a log append, so the queue keeps log order) and copies_mu_
// (the copies' index); neither is held while the other is taken, and no
// call to a peer or to Redis is made under either.
#ifndef LATENTD_SERVICE_INGEST_PATH_H_
#define LATENTD_SERVICE_INGEST_PATH_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hashring/ring_config.h"
#include "service/cluster_router.h"
#include "service/ingest_log.h"
#include "service/metrics.h"
#include "service/replica_logs.h"

namespace latentd::service {

struct IngestPathOptions {
  std::string data_dir;  // holds ingest.log (and replicas/)
  // Cluster mode with replicas > 1 keeps replica logs and copies each
  // record to replicas - 1 backups (ServiceOptions::replicas).
  bool cluster_mode = false;
  uint32_t replicas = 1;
  // At Open: damaged unmerged records refuse the start (kDataLoss) instead
  // of being skipped (ServiceOptions::refuse_ingest_loss).
  bool refuse_ingest_loss = false;
  // Tombstones of sourced records a compaction keeps (ServiceOptions::
  // keep_sources).
  size_t keep_sources = 100000;
  // The metrics it counts in (registered by the service; none may be null).
  struct Metrics {
    Gauge* pending;
    Counter* ingested;
    Counter* duplicates;
    Counter* replicated;
    Counter* under_replicated;
    Counter* replicas_adopted;
    Counter* log_damage;
    Counter* lost;
  } metrics{};
};

class IngestPath {
 public:
  IngestPath(IngestPathOptions options, ClusterRouter* router);
  ~IngestPath();  // Stop()
  IngestPath(const IngestPath&) = delete;
  IngestPath& operator=(const IngestPath&) = delete;

  // Opens the ingest log, repairing damage (reported and counted; with
  // refuse_ingest_loss unmerged losses fail instead), and queues the
  // records after `merged_through` (the token store's merged sequence);
  // then, in cluster mode with replicas > 1, opens the replica logs.
  // kDataLoss if the log ends before `merged_through` or compacted away a
  // record after it. REQUIRES: called once, before anything below.
  absl::Status Open(uint64_t merged_through);
  // Cluster mode: the Redis and cluster name the replica thread reads the
  // members from. REQUIRES: before Start().
  void SetCluster(std::string redis_url, std::string cluster);
  // Starts the background thread in cluster mode: adopting replica copies
  // of lost nodes, settling staged hand-offs.
  void Start();
  // Refuses nothing, but wakes WaitForWork and ends the replica thread's
  // wait; stopping() is true from here on.
  void BeginStop();
  // BeginStop(), then joins the replica thread. Idempotent.
  void Stop();
  bool stopping() const;

  // Appends `records` durably and queues them (see LatentdService::
  // IngestRecords for the contract): first, in cluster mode and if `route`,
  // forwards users' records owned elsewhere; drops those whose source was
  // ingested; copies the rest to their backups; appends them. Returns the
  // records accepted here plus those the owners accepted. kUnavailable
  // once BeginLeave() was called. *appended (if given) receives the first
  // and last sequence appended here ({0, 0} if none).
  struct LogRange {
    uint64_t first = 0;
    uint64_t last = 0;
  };
  absl::StatusOr<uint64_t> Ingest(std::vector<IngestRecord> records,
                                  LogRange* appended, bool route);
  // True if a record with this non-empty source is in the ingest log.
  bool SourceIngested(const std::string& source) const;
  // The staged documents of hand-off attempt `key` ("NODE/EPOCH"), once
  // Redis says it was committed, take the ingest path (copies, log,
  // queue) and its staging log goes. Returns the last sequence they (or,
  // already moved, the log) hold, for the leaving node to wait on the
  // merge. kFailedPrecondition unless the attempt was committed.
  absl::StatusOr<uint64_t> CommitHandoff(const std::string& key);
  // Hand-off documents staged here, over every undecided attempt.
  uint64_t staged_handoff_documents() const;
  // The words of each event of `user` that failed-over owners had
  // acknowledged and this node holds copies of (none outside cluster mode).
  // A failed-over origin's copies are indexed by user once. The error of
  // reading a replica log.
  absl::StatusOr<std::vector<std::vector<std::string>>> CopiedEvents(
      const std::string& user) const;
  // From here on Ingest refuses (kUnavailable): the node is leaving the
  // cluster, so each acknowledged record is in the queue for the last
  // merge.
  void BeginLeave();

  // ---- The training thread. ----
  // Copies of the queued records after sequence `merged` (the token
  // store's merged sequence), in log order.
  std::vector<IngestRecord> PendingAfter(uint64_t merged) const;
  // Drops the queued records up to `merged` (a published view shows them).
  void Published(uint64_t merged);
  // Compacts the ingest log once it is over `max_bytes` (0: never),
  // dropping the words of records up to `merged`. A failure is logged
  // (the log stays as it was).
  void Compact(uint64_t merged, uint64_t max_bytes);
  // Waits until records are queued, BeginStop() was called, or `timeout`
  // passed.
  void WaitForWork(absl::Duration timeout) const;

  // Records queued; records accepted since start-up.
  size_t pending() const;
  uint64_t ingested() const { return ingested_.load(); }
  const std::string& log_path() const;
  // The replica copies this node holds of other nodes' documents (a peer's
  // copies are appended there); nullptr unless cluster mode with
  // replicas > 1.
  ReplicaLogs* replica_logs() const { return replicas_.get(); }

 private:
  // Logs what IngestLog::Open repaired and counts it.
  void ReportLogRepair(const IngestLogRepair& repair);
  // Sends each record to its backups and returns once they hold it
  // fsynced; kUnavailable naming the backup if one cannot (some backups
  // may hold copies then). A record's backups are the first members of
  // the placement ring for its key other than this node, the members
  // leaving or down (ClusterLink::not_backups) and the node that handed
  // the record off.
  absl::Status Replicate(const std::vector<IngestRecord>& records);
  // Ingest() past the staging of hand-offs: the records this node keeps.
  absl::StatusOr<uint64_t> IngestHere(std::vector<IngestRecord> records,
                                      LogRange* appended, bool route);
  // Stages the hand-off records of *records (taking them out of it);
  // returns how many it took.
  absl::StatusOr<uint64_t> StageHandoffs(std::vector<IngestRecord>* records);
  // Moves a committed attempt's staged records into the ingest path.
  absl::StatusOr<uint64_t> MoveStaged(const std::string& key);
  // Settles every staged attempt Redis has decided (background thread).
  absl::Status SettleHandoffs();
  // Drops the records whose source was ingested before, counting them.
  void DropKnownSources(std::vector<IngestRecord>* records)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pending_mu_);
  // The background thread: adopts the copies of origins removed from the
  // cluster as lost (AdoptLostOrigins) and settles staged hand-offs
  // (SettleHandoffs), every 500 ms.
  void ReplicaLoop();
  absl::Status AdoptLostOrigins();

  const IngestPathOptions options_;
  const IngestPathOptions::Metrics& m_ = options_.metrics;
  ClusterRouter* const router_;
  // Set by Open, then only read (IngestLog and ReplicaLogs lock inside).
  std::unique_ptr<IngestLog> log_;
  std::unique_ptr<ReplicaLogs> replicas_;
  // Staged hand-offs, one log per attempt (cluster mode only).
  std::unique_ptr<ReplicaLogs> staged_;
  // Serializes the moves of committed attempts (a commit call and the
  // background thread).
  absl::Mutex commit_mu_;
  std::atomic<uint64_t> ingested_{0};

  // Acknowledged records not yet merged, and the sources ever ingested.
  mutable absl::Mutex pending_mu_;
  std::vector<IngestRecord> pending_ ABSL_GUARDED_BY(pending_mu_);
  absl::flat_hash_set<std::string> sources_ ABSL_GUARDED_BY(pending_mu_);
  bool stopping_ ABSL_GUARDED_BY(pending_mu_) = false;
  bool leaving_ ABSL_GUARDED_BY(pending_mu_) = false;

  // Failed-over origin -> user -> the words of each copied event.
  mutable absl::Mutex copies_mu_;
  mutable absl::flat_hash_map<
      std::string,
      absl::flat_hash_map<std::string, std::vector<std::vector<std::string>>>>
      copies_ ABSL_GUARDED_BY(copies_mu_);

  // The replica thread's (set before it starts): Redis and cluster name,
  // for reading which members are lost; origins that left by a removal it
  // did not see (warned once).
  std::thread replica_thread_;
  std::string cluster_redis_url_;
  std::string cluster_name_;
  absl::flat_hash_set<std::string> unknown_origins_;
  // Staged hand-off attempts Redis knows no outcome of (warned once).
  absl::flat_hash_set<std::string> unknown_handoffs_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_INGEST_PATH_H_
