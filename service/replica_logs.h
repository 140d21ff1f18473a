// ReplicaLogs: the replica copies a cluster node holds of documents other
// nodes acknowledged (--replicas 2, docs/design.md "Replicated
// ingestion"). A node that appends documents to its ingest log first sends
// each one to its backup (the next distinct member of the ring for that
// document or user), which appends it here, in the log of its origin,
// fsynced, before it answers. These copies are not sampled: they wait, for
// as long as their origin is in the cluster, for the origin's disk to be
// lost (`latentctl cluster remove-node ORIGIN --lost`); the node then
// adopts them (ingests them as its own documents) and drops the log.
//
// Files: DIR/<hex of the origin's node id>.log, each an IngestLog
// (service/ingest_log.h: length, xxh64, payload; torn tails cut on open).
// The sequences are the replica log's own, not the origin's.
//
// Thread-safety: every method may be called from any thread (one mutex).
#ifndef LATENTD_SERVICE_REPLICA_LOGS_H_
#define LATENTD_SERVICE_REPLICA_LOGS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "service/ingest_log.h"

namespace latentd::service {

class ReplicaLogs {
 public:
  // Opens (creating `dir` if missing) every origin's log under `dir`.
  // Fails naming the file on damage before a log's end or on I/O errors.
  static absl::StatusOr<std::unique_ptr<ReplicaLogs>> Open(
      const std::string& dir);

  // Appends `records` to `origin`'s log and fdatasyncs it; records whose
  // non-empty source that log holds already are dropped (a resent copy).
  // Returns how many were appended. On failure (kUnavailable naming the
  // file) nothing was appended. REQUIRES: origin non-empty; every record
  // has at least one word.
  absl::StatusOr<uint64_t> Append(const std::string& origin,
                                  std::vector<IngestRecord> records);

  // The origins this node holds copies for (with at least one record).
  std::vector<std::string> Origins() const;
  // True if `origin`'s log holds a record with this non-empty source.
  bool HoldsSource(const std::string& origin, const std::string& source) const;
  // Every record of `origin`'s log, in order (none if it has no log).
  absl::StatusOr<std::vector<IngestRecord>> Read(const std::string& origin);
  // Removes `origin`'s log (its copies were adopted). OK if it has none.
  absl::Status Drop(const std::string& origin);
  // Records held, over every origin.
  uint64_t records() const;

 private:
  explicit ReplicaLogs(std::string dir) : dir_(std::move(dir)) {}
  std::string PathOf(const std::string& origin) const;

  struct Origin {
    std::unique_ptr<IngestLog> log;
    absl::flat_hash_set<std::string> sources;
    uint64_t records = 0;
  };
  // Opens `origin`'s log (creating it), reading its records into *records
  // (if given) and noting their sources.
  absl::Status OpenOrigin(const std::string& origin,
                          std::vector<IngestRecord>* records)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  mutable absl::Mutex mu_;
  absl::node_hash_map<std::string, Origin> origins_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_REPLICA_LOGS_H_
