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
// source, doc id, user, u32 word count, the words, and, only for a record
// that carries its topics (a hand-off), u32 topic count (= word count) and
// the topics as u32; a lost-records placeholder has no words and then
// u32 0xffffffff. A torn or corrupt tail
// (a crash in the middle of an append, never acknowledged) is cut off by
// Open(); corruption before the last record is kDataLoss, or, when the
// caller asks for a repair (IngestLogOpenOptions), is skipped and reported
// (IngestLogRepair), the damaged file kept aside. Compact() bounds the file:
// merged records shrink to tombstones or go.
//
// Beside it, PATH.acked holds the highest sequence ever acknowledged (u64
// and its xxh64, rewritten in place and fdatasync'ed after the records'
// own fdatasync, before Append returns). It tells a torn tail (never
// acknowledged: cut off) from damage to acknowledged last records (reported
// as lost, never cut silently), and keeps sequences from being reused.
//
// Thread-safety: Append and the accessors are safe from any thread (one
// internal mutex serializes appends).
#ifndef LATENTD_SERVICE_INGEST_LOG_H_
#define LATENTD_SERVICE_INGEST_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/file_system.h"
#include "corpora/types.h"
#include "service/internal/ack_mark.h"

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
  // Empty: the merge gives the tokens their first topics. Else one per
  // word: the topics the tokens had on the node that handed the document
  // off (`latentctl cluster remove-node --handoff`), which the merge keeps.
  std::vector<TopicId> topics;
  // A placeholder (no words) that Open() writes when damage lost
  // acknowledged records: it holds the highest lost sequence, so sequences
  // go on past it; there is nothing to merge.
  bool lost = false;
};

// How Open() treats damage before the end of the log.
struct IngestLogOpenOptions {
  // false: such damage is kDataLoss and the file is left as it is.
  // true: the damaged stretch is skipped, the log rewritten without it
  // (temp file, fsync, rename) and the old file kept aside as
  // PATH.damaged-<UTC time>; IngestLogRepair says what was lost.
  bool repair = false;
  // The token store's merged sequence: a damaged record at or below it is
  // in the store already, so skipping it loses only its source (a
  // redelivery of that source would be ingested again). Damage that held
  // records above it lost acknowledged documents. The repaired log keeps
  // sequences increasing past it (a tombstone) if its last records were
  // damaged.
  uint64_t merged_through = 0;
  // With `repair`: damage that lost acknowledged, unmerged records is
  // still kDataLoss (naming the sequences), nothing changed.
  bool refuse_loss = false;
};

// The acknowledgement mark PATH.acked (see the file comment).
std::string AckMarkPath(const std::string& log_path);

// One stretch of the log that held no intact record.
struct IngestLogDamage {
  uint64_t offset = 0;  // in the damaged file
  uint64_t bytes = 0;
  uint64_t after_sequence = 0;   // the intact record before it (0: none)
  uint64_t before_sequence = 0;  // the intact record after it (0: none)
  // Acknowledged records it held that were not merged yet, now lost:
  // sequences first_lost..last_lost (none if first_lost == 0).
  uint64_t first_lost = 0;
  uint64_t last_lost = 0;
  uint64_t lost() const {
    return first_lost == 0 ? 0 : last_lost - first_lost + 1;
  }
  // "45 bytes at offset 44 (after sequence 1, before 3): sequence 2 lost
  // (acknowledged, not merged)" or "...: merged already, skipped".
  std::string Describe() const;
};

// What Open() repaired.
struct IngestLogRepair {
  std::vector<IngestLogDamage> damage;  // in file order
  std::string kept_aside;  // the damaged file's new name; "" if none
  // PATH.acked did not verify: the log's last records could not be checked
  // against it (a torn tail was taken as unacknowledged, as without it).
  bool ack_mark_damaged = false;
  uint64_t lost() const;  // Σ damage[i].lost()
};

class IngestLog {
 public:
  // Opens (creating if missing) the log at `path` and its mark PATH.acked,
  // fills *records with every intact record, in order, and cuts off a torn
  // tail: a stretch at the end that holds no intact record (an append that
  // did not finish, never acknowledged), unless the mark or the token store
  // (IngestLogOpenOptions::merged_through) says records past the last
  // intact one were acknowledged: then it is damage, and the records the
  // mark names are lost. Damage is kDataLoss naming the path and offset,
  // or, with options.repair, is skipped and reported in *repair (if given;
  // cleared first); sequences go on after the highest acknowledged one
  // either way. Fails naming the path on I/O errors.
  static absl::StatusOr<std::unique_ptr<IngestLog>> Open(
      const std::string& path, std::vector<IngestRecord>* records,
      const IngestLogOpenOptions& options = {},
      IngestLogRepair* repair = nullptr);
  ~IngestLog();

  // Removes the log at `path` and its mark (a replica log whose documents
  // were adopted). NotFound is not an error.
  static absl::Status Remove(const std::string& path);

  // Assigns consecutive sequences to *records, appends them, fdatasyncs,
  // then raises the mark PATH.acked to the last of them and fdatasyncs it.
  // Returns when both are durable. On failure (a write, a short write or
  // an fdatasync; kUnavailable naming the log and the cause) nothing is
  // acknowledged: the file is cut back to its previous length (if that
  // fails, the next Append cuts it before it writes, or fails), the
  // sequences are not used up, and the next Append may succeed.
  // REQUIRES: every record has at least one word.
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
  // `merged_through` are kept whole. On failure (kDataLoss if a record no
  // longer matches its checksum, kUnavailable on I/O errors) the old log
  // stays and appends go on into it; if only the directory's fsync after
  // the rename failed, the compacted log is current and the next Append
  // syncs the directory before it acknowledges anything.
  absl::Status Compact(uint64_t merged_through, size_t keep_sources);

 private:
  IngestLog(std::string path, std::unique_ptr<WritableFile> file,
            std::unique_ptr<WritableFile> mark, uint64_t size,
            uint64_t last_sequence);

  // What Open() read: the intact records with their byte spans, where the
  // last one ends (a torn tail follows), and the damage found.
  struct Scan {
    std::vector<IngestRecord> records;
    std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) each
    size_t end = 0;
    std::vector<IngestLogDamage> damage;
  };
  // `acked`: the mark; records up to it were acknowledged.
  static Scan ScanLog(std::string_view all, uint64_t merged_through,
                      uint64_t acked);
  // Open() on a damaged log: kDataLoss, or the rewrite (see Open()).
  static absl::StatusOr<std::unique_ptr<IngestLog>> Repair(
      const std::string& path, std::string_view all, Scan scan,
      const IngestLogOpenOptions& options, uint64_t acked,
      std::vector<IngestRecord>* records, IngestLogRepair* repair);

  // Writes `sequence` into the mark and fdatasyncs it.
  absl::Status WriteMark(uint64_t sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable absl::Mutex mu_;
  std::unique_ptr<WritableFile> file_ ABSL_GUARDED_BY(mu_);
  uint64_t size_ ABSL_GUARDED_BY(mu_);  // the log's bytes: acknowledged
  // What a failed append left that could not be undone yet (bytes past
  // size_, a mark above last_sequence_): the next Append undoes it first.
  internal::FailedAppend failed_ ABSL_GUARDED_BY(mu_);
  // false after a compaction whose directory fsync failed.
  bool directory_synced_ ABSL_GUARDED_BY(mu_) = true;
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_);
  // PATH.acked, open for rewriting in place.
  std::unique_ptr<WritableFile> mark_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_INGEST_LOG_H_
