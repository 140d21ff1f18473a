#include "service/ingest_log.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "service/internal/ack_mark.h"
#include "service/internal/framed_records.h"
#include "xxhash.h"

namespace latentd::service {
namespace {

using internal::AppendFrame;
using internal::Frame;
using internal::FrameAt;

constexpr uint32_t kLostMarker = 0xffffffffu;  // see IngestRecord::lost

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out->append(b, 4);
}
void PutU64(std::string* out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out->append(b, 8);
}
void PutString(std::string* out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Reads little-endian fields from a payload, failing on overrun.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  bool U32(uint32_t* v) { return Raw(v, 4); }
  bool U64(uint64_t* v) { return Raw(v, 8); }
  bool String(std::string* s) {
    uint32_t n;
    if (!U32(&n) || n > data_.size() - pos_) return false;
    s->assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == data_.size(); }

 private:
  bool Raw(void* v, size_t n) {
    if (data_.size() - pos_ < n) return false;
    std::memcpy(v, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

std::string Encode(const IngestRecord& r) {
  std::string payload;
  PutU64(&payload, r.sequence);
  PutString(&payload, r.source);
  PutString(&payload, r.doc_id);
  PutString(&payload, r.user);
  PutU32(&payload, static_cast<uint32_t>(r.words.size()));
  for (const std::string& w : r.words) PutString(&payload, w);
  if (r.lost) {
    PutU32(&payload, kLostMarker);
  } else if (!r.topics.empty()) {
    PutU32(&payload, static_cast<uint32_t>(r.topics.size()));
    for (TopicId k : r.topics) PutU32(&payload, k);
  }
  std::string out;
  AppendFrame(payload, &out);
  return out;
}

bool Decode(std::string_view payload, IngestRecord* r) {
  Cursor c(payload);
  uint32_t n = 0;
  if (!c.U64(&r->sequence) || !c.String(&r->source) || !c.String(&r->doc_id) ||
      !c.String(&r->user) || !c.U32(&n)) {
    return false;
  }
  if (n > payload.size()) return false;
  r->words.resize(n);
  for (std::string& w : r->words) {
    if (!c.String(&w) || w.empty()) return false;
  }
  if (c.done()) return true;
  if (!c.U32(&n)) return false;
  if (n == kLostMarker && r->words.empty()) {
    r->lost = true;
    return c.done();
  }
  // A hand-off's topics: one per word.
  if (n != r->words.size() || n == 0) return false;
  r->topics.resize(n);
  for (TopicId& k : r->topics) {
    if (!c.U32(&k) || k >= kMaxTopics) return false;
  }
  return c.done();
}

// The whole log (no size limit: the log is bounded by compaction).
absl::StatusOr<std::string> ReadAll(const std::string& path) {
  return ReadFileToString(path, std::numeric_limits<size_t>::max());
}

// `status` (a failed file operation on the log) as kUnavailable, so that
// clients retry: "ingest log PATH: WHAT (WHY)".
absl::Status LogError(const std::string& path, std::string_view what,
                      const absl::Status& status) {
  return absl::UnavailableError(absl::StrCat("ingest log ", path, ": ",
                                             std::string(what), " (",
                                             status.message(), ")"));
}

// The record at `pos` if it is intact (complete, its checksum matching, it
// decodes) and its sequence is above `after`; *size is its length then.
bool IntactAt(std::string_view all, size_t pos, uint64_t after, IngestRecord* r,
              size_t* size) {
  const std::optional<Frame> frame = FrameAt(all, pos);
  if (!frame) return false;
  const std::string_view payload = frame->payload;
  if (payload.size() >= 8) {
    // Cheap test first: the sequence must go up.
    uint64_t seq;
    std::memcpy(&seq, payload.data(), 8);
    if (seq <= after) return false;
  }
  *r = IngestRecord();
  if (!frame->ChecksumMatches() || !Decode(payload, r) ||
      r->sequence <= after) {
    return false;
  }
  *size = frame->size;
  return true;
}

// The offset of the first intact record after `pos` with a sequence above
// `after`, or npos. One offset at a time: a damaged length field tells
// nothing about where the next record starts.
size_t NextIntact(std::string_view all, size_t pos, uint64_t after,
                  IngestRecord* r, size_t* size) {
  for (size_t p = pos + 1; p < all.size(); ++p) {
    if (IntactAt(all, p, after, r, size)) return p;
  }
  return std::string_view::npos;
}

}  // namespace

std::string AckMarkPath(const std::string& log_path) {
  return internal::AckMarkPath(log_path);
}

std::string IngestLogDamage::Describe() const {
  std::string out = absl::StrCat(bytes, " bytes at offset ", offset,
                                 " (after sequence ", after_sequence);
  if (before_sequence != 0) {
    absl::StrAppend(&out, ", before ", before_sequence, ")");
  } else {
    absl::StrAppend(&out, ", at the end)");
  }
  if (lost() == 0) {
    absl::StrAppend(&out, ": merged already, skipped");
  } else if (first_lost == last_lost) {
    absl::StrAppend(&out, ": sequence ", first_lost,
                    " lost (acknowledged, not merged)");
  } else {
    absl::StrAppend(&out, ": sequences ", first_lost, "..", last_lost,
                    " lost (acknowledged, not merged)");
  }
  return out;
}

uint64_t IngestLogRepair::lost() const {
  uint64_t n = 0;
  for (const IngestLogDamage& d : damage) n += d.lost();
  return n;
}

IngestLog::Scan IngestLog::ScanLog(std::string_view all,
                                   uint64_t merged_through, uint64_t acked) {
  Scan scan;
  size_t pos = 0;
  uint64_t last = 0;
  IngestRecord r;
  size_t size = 0;
  while (pos < all.size()) {
    if (IntactAt(all, pos, last, &r, &size)) {
      scan.spans.emplace_back(pos, pos + size);
      last = r.sequence;
      scan.records.push_back(std::move(r));
      pos += size;
      continue;
    }
    const size_t next = NextIntact(all, pos, last, &r, &size);
    if (next == std::string_view::npos) break;  // the end: see below
    IngestLogDamage d;
    d.offset = pos;
    d.after_sequence = last;
    d.bytes = next - pos;
    d.before_sequence = r.sequence;
    // Unmerged sequences are never compacted away, so exactly those
    // between the intact neighbours above the merged one are lost.
    const uint64_t first = std::max(last, merged_through) + 1;
    if (first < r.sequence) {
      d.first_lost = first;
      d.last_lost = r.sequence - 1;
    }
    scan.damage.push_back(d);
    pos = next;
  }
  scan.end = pos;
  // The end: a torn append (never acknowledged), unless the store merged
  // past `last` or the mark says later records were acknowledged. A tail
  // cut off whole (no bytes left) is damage then too.
  if (last < std::max(merged_through, acked)) {
    IngestLogDamage d;
    d.offset = pos;
    d.bytes = all.size() - pos;
    d.after_sequence = last;
    const uint64_t first = std::max(last, merged_through) + 1;
    if (first <= acked) {
      d.first_lost = first;
      d.last_lost = acked;
    }
    scan.damage.push_back(d);
  }
  return scan;
}

IngestLog::IngestLog(std::string path, std::unique_ptr<WritableFile> file,
                     std::unique_ptr<WritableFile> mark, uint64_t size,
                     uint64_t last_sequence)
    : path_(std::move(path)),
      file_(std::move(file)),
      size_(size),
      last_sequence_(last_sequence),
      mark_(std::move(mark)) {}

IngestLog::~IngestLog() {
  absl::MutexLock lock(&mu_);
  // Last chance to undo a failed append before a restart reads it.
  (void)internal::UndoFailedAppend(file_.get(), size_, mark_.get(),
                                   last_sequence_, &failed_);
}

absl::StatusOr<std::unique_ptr<IngestLog>> IngestLog::Open(
    const std::string& path, std::vector<IngestRecord>* records,
    const IngestLogOpenOptions& options, IngestLogRepair* repair) {
  records->clear();
  if (repair != nullptr) *repair = IngestLogRepair();
  absl::StatusOr<internal::AckMark> read = internal::ReadAckMark(path);
  if (!read.ok()) return LogError(path, "cannot read its mark", read.status());
  const internal::AckMark mark = *read;
  std::unique_ptr<IngestLog> log;
  {
    // Created if missing, before it is read.
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        FileSystem::Default()->OpenForWrite(path, WriteMode::kKeep);
    if (!file.ok()) return LogError(path, "cannot open", file.status());
    LATENTD_ASSIGN_OR_RETURN(std::string data, ReadAll(path));
    Scan scan = ScanLog(data, options.merged_through, mark.value);
    if (!scan.damage.empty()) {
      // Damage is repaired by a rewrite, never in place.
      file->reset();
      LATENTD_ASSIGN_OR_RETURN(log, Repair(path, data, std::move(scan), options,
                                           mark.value, records, repair));
    } else {
      const size_t pos = scan.end;
      *records = std::move(scan.records);
      const uint64_t last = records->empty() ? 0 : records->back().sequence;
      if (pos != data.size()) {
        // Never acknowledged: the append did not finish.
        absl::Status cut = (*file)->Truncate(pos);
        if (cut.ok()) cut = (*file)->Sync();
        if (!cut.ok()) return LogError(path, "cannot cut off a torn tail", cut);
      }
      log.reset(new IngestLog(path, *std::move(file), nullptr, pos, last));
    }
  }
  if (repair != nullptr) repair->ack_mark_damaged = mark.damaged;
  absl::StatusOr<std::unique_ptr<WritableFile>> mark_file =
      FileSystem::Default()->OpenForWrite(AckMarkPath(path), WriteMode::kKeep);
  if (!mark_file.ok()) {
    return LogError(path, "cannot open its mark", mark_file.status());
  }
  absl::MutexLock lock(&log->mu_);
  log->mark_ = *std::move(mark_file);
  // A record durable but not acknowledged when the process stopped is kept,
  // and so acknowledged now; a repair's tombstone is at least the mark.
  if (!mark.exists || mark.damaged || log->last_sequence_ != mark.value) {
    LATENTD_RETURN_IF_ERROR(log->WriteMark(log->last_sequence_));
  }
  LATENTD_RETURN_IF_ERROR(SyncDirectoryOf(path));
  return log;
}

absl::Status IngestLog::Remove(const std::string& path) {
  FileSystem* fs = FileSystem::Default();
  for (const std::string& p : {AckMarkPath(path), path}) {
    absl::Status removed = fs->Remove(p);
    if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  }
  return absl::OkStatus();
}

absl::Status IngestLog::WriteMark(uint64_t sequence) {
  absl::Status status = internal::WriteAckMark(mark_.get(), sequence);
  if (!status.ok()) return LogError(path_, "cannot write its mark", status);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<IngestLog>> IngestLog::Repair(
    const std::string& path, std::string_view all, Scan scan,
    const IngestLogOpenOptions& options, uint64_t acked,
    std::vector<IngestRecord>* records, IngestLogRepair* repair) {
  IngestLogRepair found;
  found.damage = std::move(scan.damage);
  if (!options.repair) {
    return absl::DataLossError(absl::StrCat(
        "ingest log ", path, ": damaged record at byte ",
        found.damage.front().offset, " (", all.size(), " bytes in the file)"));
  }
  if (options.refuse_loss && found.lost() > 0) {
    std::string what;
    for (const IngestLogDamage& d : found.damage) {
      if (d.lost() > 0) absl::StrAppend(&what, "; ", d.Describe());
    }
    return absl::DataLossError(
        absl::StrCat("ingest log ", path, ": ", found.lost(),
                     " acknowledged record(s) not yet merged are damaged", what,
                     " (left as it is: refusing to start)"));
  }
  // The intact records, then (if the damage took the last merged or
  // acknowledged ones) a tombstone at the highest of those, so that
  // sequences go on past it and are never used twice.
  std::string out;
  for (const auto& [begin, end] : scan.spans) {
    out.append(all.substr(begin, end - begin));
  }
  uint64_t last = scan.records.empty() ? 0 : scan.records.back().sequence;
  if (last < std::max(options.merged_through, acked)) {
    IngestRecord& tomb = scan.records.emplace_back();
    tomb.sequence = std::max(options.merged_through, acked);
    tomb.lost = acked > options.merged_through;
    out += Encode(tomb);
    last = tomb.sequence;
  }
  // Keep the evidence first: a crash before the rewrite leaves the damaged
  // log in place (repaired again on the next start), one after it the
  // repaired log; the damaged bytes are kept aside either way.
  LATENTD_ASSIGN_OR_RETURN(found.kept_aside, KeepDamagedCopy(path));
  LATENTD_RETURN_IF_ERROR(WriteFileAtomically(path, out));
  absl::StatusOr<std::unique_ptr<WritableFile>> file =
      FileSystem::Default()->OpenForWrite(path, WriteMode::kKeep);
  if (!file.ok()) return LogError(path, "cannot reopen", file.status());
  *records = std::move(scan.records);
  if (repair != nullptr) *repair = std::move(found);
  return std::unique_ptr<IngestLog>(
      new IngestLog(path, *std::move(file), nullptr, out.size(), last));
}

absl::Status IngestLog::Append(std::vector<IngestRecord>* records) {
  absl::MutexLock lock(&mu_);
  if (!directory_synced_) {
    // A compaction renamed the log but could not make the name durable:
    // nothing is acknowledged in the new file before it is.
    absl::Status synced = SyncDirectoryOf(path_);
    if (!synced.ok()) return LogError(path_, "not appended", synced);
    directory_synced_ = true;
  }
  // A failed append's bytes or mark may still be there: a reopen must not
  // take them for acknowledged records.
  absl::Status undone = internal::UndoFailedAppend(
      file_.get(), size_, mark_.get(), last_sequence_, &failed_);
  if (!undone.ok()) {
    return LogError(path_, "not appended: a failed append is still there",
                    undone);
  }
  std::string data;
  uint64_t seq = last_sequence_;
  for (IngestRecord& r : *records) {
    r.sequence = ++seq;
    data += Encode(r);
  }
  absl::Status status = file_->WriteAt(size_, data);
  if (status.ok()) status = file_->DataSync();
  if (status.ok()) {
    status = WriteMark(seq);
    // The mark may have reached the disk all the same: written back to
    // last_sequence_ before anything else is acknowledged.
    failed_.mark = !status.ok();
  }
  if (!status.ok()) {
    // Not acknowledged: cut off what may have been written (a short write,
    // or the whole of it before a failed fdatasync). If that fails too, the
    // next append cuts it first.
    failed_.tail = true;
    absl::Status undone = internal::UndoFailedAppend(
        file_.get(), size_, mark_.get(), last_sequence_, &failed_);
    if (!undone.ok()) {
      // Said, since a crash before the next cut could bring the records
      // back (a client retrying would then ingest them twice).
      return LogError(path_,
                      absl::StrCat("append failed, nothing acknowledged; "
                                   "not cut off yet: ",
                                   undone.message()),
                      status);
    }
    return LogError(path_, "append failed, nothing acknowledged", status);
  }
  size_ += data.size();
  last_sequence_ = seq;
  return absl::OkStatus();
}

uint64_t IngestLog::size_bytes() const {
  absl::MutexLock lock(&mu_);
  return size_;
}

absl::Status IngestLog::Compact(uint64_t merged_through, size_t keep_sources) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::string> data = ReadAll(path_);
  if (!data.ok()) return data.status();
  std::vector<IngestRecord> records;
  // Bytes past size_ are a failed append (dirty_tail_): not the log's.
  const std::string_view all =
      std::string_view(*data).substr(0, static_cast<size_t>(size_));
  for (size_t pos = 0; pos + internal::kFrameHeaderBytes <= all.size();) {
    // Checked again: a record damaged since Open() would otherwise be
    // rewritten with a fresh checksum, its damage made undetectable.
    const std::optional<Frame> frame = FrameAt(all, pos);
    IngestRecord& r = records.emplace_back();
    if (!frame || !frame->ChecksumMatches() || !Decode(frame->payload, &r)) {
      return absl::DataLossError(
          absl::StrCat("ingest log ", path_, ": damaged record at byte ", pos));
    }
    pos += frame->size;
  }
  // Which merged records keep a tombstone: the last one, and the
  // keep_sources most recent ones with a source.
  std::vector<bool> keep(records.size(), false);
  size_t sourced = 0;
  for (size_t i = records.size(); i-- > 0;) {
    if (records[i].sequence > merged_through || i + 1 == records.size()) {
      keep[i] = true;
    } else if (!records[i].source.empty() && sourced < keep_sources) {
      keep[i] = true;
      ++sourced;
    }
  }
  std::string out;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!keep[i]) continue;
    if (records[i].sequence <= merged_through) {
      records[i].words.clear();
      records[i].topics.clear();
    }
    out += Encode(records[i]);
  }
  // The new log is opened before it replaces the old one: once renamed,
  // appends go to it (the file named path_), and if any step before fails
  // they go on into the old log.
  FileSystem* fs = FileSystem::Default();
  const std::string tmp = path_ + ".tmp";
  absl::StatusOr<std::unique_ptr<WritableFile>> fresh =
      fs->OpenForWrite(tmp, WriteMode::kTruncate);
  absl::Status status = fresh.status();
  if (status.ok()) status = (*fresh)->Append(out);
  if (status.ok()) status = (*fresh)->Sync();
  if (status.ok()) status = fs->Rename(tmp, path_);
  if (!status.ok()) {
    (void)fs->Remove(tmp);
    return LogError(path_, "compaction failed, the old log stays", status);
  }
  file_ = *std::move(fresh);
  size_ = out.size();
  failed_.tail = false;  // (a new file)
  absl::Status synced = SyncDirectoryOf(path_);
  directory_synced_ = synced.ok();
  if (!synced.ok()) {
    return LogError(path_, "compacted, but the new name is not durable yet",
                    synced);
  }
  return absl::OkStatus();
}

uint64_t IngestLog::last_sequence() const {
  absl::MutexLock lock(&mu_);
  return last_sequence_;
}

}  // namespace latentd::service
