#include "service/edge_journal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "service/internal/ack_mark.h"
#include "service/internal/framed_records.h"

namespace latentd::service {
namespace {

constexpr size_t kEdgeBytes = 20;  // u64 src, u64 dst, f32 weight

template <typename T>
void Put(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out->append(b, sizeof(T));
}

template <typename T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Appends the framed records of `edges` (kMaxEdgesPerRecord a record).
void EncodeEdges(const std::vector<Edge>& edges, std::string* out) {
  for (size_t i = 0; i < edges.size(); i += EdgeJournal::kMaxEdgesPerRecord) {
    const size_t n =
        std::min(edges.size() - i, EdgeJournal::kMaxEdgesPerRecord);
    std::string payload;
    payload.reserve(4 + n * kEdgeBytes);
    Put<uint32_t>(&payload, static_cast<uint32_t>(n));
    for (size_t j = i; j < i + n; ++j) {
      Put<uint64_t>(&payload, edges[j].src);
      Put<uint64_t>(&payload, edges[j].dst);
      Put<float>(&payload, edges[j].weight);
    }
    internal::AppendFrame(payload, out);
  }
}

// The payload's edges, appended to *edges (if given); false if it is not
// a well-formed edges payload.
bool DecodeEdges(std::string_view payload, std::vector<Edge>* edges) {
  if (payload.size() < 4) return false;
  const uint32_t n = Get<uint32_t>(payload.data());
  if (n == 0 || payload.size() - 4 != size_t{n} * kEdgeBytes) return false;
  for (size_t i = 0; i < n; ++i) {
    const char* p = payload.data() + 4 + i * kEdgeBytes;
    const Edge e{Get<uint64_t>(p), Get<uint64_t>(p + 8), Get<float>(p + 16)};
    if (!(e.src < e.dst) || !(e.weight > 0) || !std::isfinite(e.weight)) {
      return false;
    }
    if (edges != nullptr) edges->push_back(e);
  }
  return true;
}

// The edges of a legacy plain-text journal; a last line without its
// newline (a write a crash cut, never acknowledged) is left out.
absl::StatusOr<std::vector<Edge>> ReadLegacy(const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(
      std::string text,
      ReadFileToString(path, std::numeric_limits<size_t>::max()));
  const size_t end = text.rfind('\n');
  const size_t keep = end == std::string::npos ? 0 : end + 1;
  if (keep < text.size()) {
    log::Warning("latentd",
                 absl::StrCat(path, ": leaving out ", text.size() - keep,
                              " bytes of an unfinished last line (a write "
                              "cut by a crash, never acknowledged)"));
    text.resize(keep);
  }
  LATENTD_ASSIGN_OR_RETURN(EdgeList list, ParseEdgeList(text, path));
  return std::move(list.edges);
}

// Rewrites the journal as its first `keep` bytes of `data` plus the legacy
// file's edges it lacks, then removes the legacy file. A crash before the
// removal leaves both: the next Open() finds the edges there already.
absl::Status TakeInLegacy(const std::string& legacy, const std::string& path,
                          std::string* data, size_t keep,
                          std::vector<Edge>* edges) {
  LATENTD_ASSIGN_OR_RETURN(std::vector<Edge> old, ReadLegacy(legacy));
  absl::flat_hash_set<std::pair<VertexKey, VertexKey>> have;
  for (const Edge& e : *edges) have.insert({e.src, e.dst});
  std::vector<Edge> added;
  for (const Edge& e : old) {
    if (have.insert({e.src, e.dst}).second) added.push_back(e);
  }
  data->resize(keep);
  EncodeEdges(added, data);
  LATENTD_RETURN_IF_ERROR(WriteFileAtomically(path, *data));
  log::Info("latentd",
            absl::StrCat("graph: ", legacy, " (the old plain-text format, ",
                         old.size(), " edges, ", added.size(),
                         " of them new) rewritten into ", path,
                         "; the old file is removed"));
  absl::Status removed = FileSystem::Default()->Remove(legacy);
  if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  LATENTD_RETURN_IF_ERROR(SyncDirectoryOf(legacy));
  edges->insert(edges->end(), added.begin(), added.end());
  return absl::OkStatus();
}

// `status` of a failed append as kUnavailable: nothing acknowledged.
absl::Status AppendError(const std::string& path, const char* what,
                         const absl::Status& status) {
  return absl::UnavailableError(absl::StrCat("IngestEdges: ", what, " ", path,
                                             ": ", status.message(),
                                             " (nothing acknowledged)"));
}

}  // namespace

EdgeJournal::EdgeJournal(std::string path, std::unique_ptr<WritableFile> file,
                         std::unique_ptr<WritableFile> mark, uint64_t size)
    : path_(std::move(path)),
      file_(std::move(file)),
      mark_(std::move(mark)),
      size_(size) {}

EdgeJournal::~EdgeJournal() {
  if (file_ != nullptr) {
    // Last chance to undo a failed append before a restart reads it.
    (void)internal::UndoFailedAppend(file_.get(), size_, mark_.get(), size_,
                                     &failed_);
  }
}

absl::StatusOr<std::unique_ptr<EdgeJournal>> EdgeJournal::Open(
    const std::string& dir, std::vector<Edge>* edges) {
  edges->clear();
  const std::string path = dir + "/" + kFileName;
  const std::string legacy = dir + "/" + kLegacyFileName;
  std::string data;
  if (PathExists(path)) {
    LATENTD_ASSIGN_OR_RETURN(
        data, ReadFileToString(path, std::numeric_limits<size_t>::max()));
  }
  absl::StatusOr<internal::AckMark> mark = internal::ReadAckMark(path);
  if (!mark.ok()) {
    return absl::UnavailableError(absl::StrCat("ingested edges journal ", path,
                                               ": ", mark.status().message()));
  }
  const internal::FrameScan scan = internal::ScanFrames(
      data, [](std::string_view p) { return DecodeEdges(p, nullptr); });
  if (!scan.torn_tail()) {
    return absl::DataLossError(absl::StrCat(
        "ingested edges journal ", path, ": damaged record at byte ", scan.end,
        " (", scan.resumes_at - scan.end,
        " bytes before the next intact record, ", data.size(),
        " bytes in the file); left as it is: move it aside to start "
        "without the edges it holds"));
  }
  if (mark->value > scan.end) {
    return absl::DataLossError(absl::StrCat(
        "ingested edges journal ", path, ": acknowledged edges lost: ",
        mark->value, " bytes were acknowledged (", internal::AckMarkPath(path),
        ") but the intact records end at byte ", scan.end, " (", data.size(),
        " bytes in the file); left as it is: move both files aside to start "
        "without the edges they hold"));
  }
  for (std::string_view p : scan.payloads) DecodeEdges(p, edges);
  size_t keep = scan.end;
  if (PathExists(legacy)) {
    LATENTD_RETURN_IF_ERROR(TakeInLegacy(legacy, path, &data, keep, edges));
    keep = data.size();
  }
  LATENTD_ASSIGN_OR_RETURN(
      std::unique_ptr<WritableFile> file,
      FileSystem::Default()->OpenForWrite(path, WriteMode::kKeep));
  if (keep < data.size()) {
    log::Warning("latentd",
                 absl::StrCat(path, ": cutting off ", data.size() - keep,
                              " bytes after the last intact record (an "
                              "append cut by a crash, never acknowledged)"));
    LATENTD_RETURN_IF_ERROR(file->Truncate(keep));
    LATENTD_RETURN_IF_ERROR(file->DataSync());
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> mark_file =
      FileSystem::Default()->OpenForWrite(internal::AckMarkPath(path),
                                          WriteMode::kKeep);
  if (!mark_file.ok()) return mark_file.status();
  // Records durable but not acknowledged when the process stopped are
  // kept, and so acknowledged now.
  if (!mark->exists || mark->damaged || mark->value != keep) {
    LATENTD_RETURN_IF_ERROR(internal::WriteAckMark(mark_file->get(), keep));
    LATENTD_RETURN_IF_ERROR(SyncDirectoryOf(path));
  }
  return std::unique_ptr<EdgeJournal>(
      new EdgeJournal(path, std::move(file), *std::move(mark_file), keep));
}

absl::Status EdgeJournal::Append(const std::vector<Edge>& edges) {
  if (file_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("IngestEdges: ", path_, " is closed"));
  }
  // A failed append's bytes or mark may still be there: undone before
  // anything after them is acknowledged.
  absl::Status undone = internal::UndoFailedAppend(
      file_.get(), size_, mark_.get(), size_, &failed_);
  if (!undone.ok()) {
    return AppendError(path_, "a failed append is still in", undone);
  }
  std::string data;
  EncodeEdges(edges, &data);
  absl::Status status = file_->WriteAt(size_, data);
  if (status.ok()) status = file_->DataSync();
  if (status.ok()) {
    status = internal::WriteAckMark(mark_.get(), size_ + data.size());
    failed_.mark = !status.ok();
  }
  if (!status.ok()) {
    // Take back what part was written, so the file stays whole records; if
    // that fails too, the next append undoes it first.
    failed_.tail = true;
    (void)internal::UndoFailedAppend(file_.get(), size_, mark_.get(), size_,
                                     &failed_);
    return AppendError(path_, "cannot append to", status);
  }
  size_ += data.size();
  return absl::OkStatus();
}

absl::Status EdgeJournal::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  (void)internal::UndoFailedAppend(file_.get(), size_, mark_.get(), size_,
                                   &failed_);
  absl::Status closed = file_->Close();
  file_.reset();
  absl::Status mark_closed = mark_->Close();
  mark_.reset();
  return closed.ok() ? mark_closed : closed;
}

}  // namespace latentd::service
