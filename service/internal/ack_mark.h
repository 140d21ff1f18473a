// The acknowledgement mark kept beside a journal, JOURNAL.acked: a u64 and
// the xxh64 of its 8 bytes, rewritten in place and fdatasync'ed after the
// journal's own fdatasync, before an append is acknowledged. What the u64
// counts is the journal's (the ingest log: its last acknowledged sequence;
// the edge journal: its acknowledged length in bytes). It tells a torn tail
// (past the mark: never acknowledged) from damage to acknowledged records.
//
// Thread-safety: pure functions; the journal serializes its writes.
#ifndef LATENTD_SERVICE_INTERNAL_ACK_MARK_H_
#define LATENTD_SERVICE_INTERNAL_ACK_MARK_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/file_system.h"

namespace latentd::service::internal {

// JOURNAL.acked.
std::string AckMarkPath(const std::string& journal_path);

struct AckMark {
  uint64_t value = 0;    // 0 when there is no mark or it did not verify
  bool exists = false;   // the file exists (perhaps empty: never written)
  bool damaged = false;  // it exists but did not verify
};
// Reads the mark of `journal_path`; an error is the read's, naming the
// mark's path.
absl::StatusOr<AckMark> ReadAckMark(const std::string& journal_path);
// Writes `value` into `mark` (the mark file, open for writing in place)
// and fdatasyncs it.
absl::Status WriteAckMark(WritableFile* mark, uint64_t value);

// What a failed append may have left: bytes past the journal's
// acknowledged end (tail), and a mark on disk above what is acknowledged
// (mark: its write failed, perhaps after reaching the disk).
struct FailedAppend {
  bool tail = false;
  bool mark = false;
};
// Undoes what `failed` names, the mark first: writes `acked` back into
// `mark`, then cuts `journal` back to `size` and fdatasyncs it. In that
// order the mark never names more than the journal holds, which a restart
// would read as acknowledged records lost. Clears what it undid; the
// first error (the tail then stays while the mark could not be written).
absl::Status UndoFailedAppend(WritableFile* journal, uint64_t size,
                              WritableFile* mark, uint64_t acked,
                              FailedAppend* failed);

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_ACK_MARK_H_
