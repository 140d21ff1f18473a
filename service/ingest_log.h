// IngestLog: the fsynced, append-only journal of acknowledged documents
// under the data directory (DIR/ingest.log). A document is acknowledged (a
// 200 on the API, an XACK on Redis) only after Append() returned, i.e. after
// its record was written and fdatasync'ed. The training thread merges the
// records into the token store at the next sweep boundary; the token store
// remembers the last merged sequence (see service/store_merge.h), so a
// restart replays exactly the records after it: nothing acknowledged is
// lost and nothing is applied twice.
//
// File: a sequence of records, each u32 payload length, u64 xxh64 of the
// payload, then the payload: u64 sequence, strings (u32 length + bytes)
// source, doc id, user, u32 word count, the words. A torn or corrupt tail
// (a crash in the middle of an append, never acknowledged) is cut off by
// Open(); corruption before the last record is kDataLoss. Compact() bounds
// the file: merged records shrink to tombstones or go.
//
// Thread-safety: Append and the accessors are safe from any thread (one
// internal mutex serializes appends).
#ifndef LATENTD_SERVICE_INGEST_LOG_H_
#define LATENTD_SERVICE_INGEST_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace latentd::service {

struct IngestRecord {
  uint64_t sequence = 0;  // assigned by Append, 1, 2, ...
  // Where it came from, for deduplication of redeliveries
  // ("redis:<stream>/<entry id>", "file:<name>"); "" for API calls.
  std::string source;
  std::string doc_id;  // the client's id ("" if none)
  std::string user;    // "" = a document of its own
  // Normalised; empty only in a tombstone (see Compact()).
  std::vector<std::string> words;
};

class IngestLog {
 public:
  // Opens (creating if missing) the log at `path`, fills *records with every
  // intact record, in order, and cuts off a torn tail. Fails naming the path
  // and offset if the file is damaged before its last record.
  static absl::StatusOr<std::unique_ptr<IngestLog>> Open(
      const std::string& path, std::vector<IngestRecord>* records);
  ~IngestLog();

  // Assigns consecutive sequences to *records, appends them, and fdatasyncs.
  // Returns when they are durable. On failure the file is cut back to its
  // previous length and nothing is acknowledged (kUnavailable on I/O
  // errors). REQUIRES: every record has at least one word.
  absl::Status Append(std::vector<IngestRecord>* records);

  uint64_t last_sequence() const;
  uint64_t size_bytes() const;
  const std::string& path() const { return path_; }

  // Rewrites the log (temp file, fsync, rename) without the words of the
  // records at or below `merged_through` (they are in the token store now):
  // such a record is kept as a tombstone (sequence and source, no words)
  // if it is the last record or among the `keep_sources` most recent ones
  // with a source, so that sequences never restart and a redelivery is
  // still recognised; the others are dropped. Records above
  // `merged_through` are kept whole. On failure the old log stays.
  absl::Status Compact(uint64_t merged_through, size_t keep_sources);

 private:
  IngestLog(std::string path, int fd, uint64_t size, uint64_t last_sequence);

  const std::string path_;
  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_);
  uint64_t size_ ABSL_GUARDED_BY(mu_);
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_INGEST_LOG_H_
