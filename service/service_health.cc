// LatentdService::Readiness (GET /readyz): whether this node should be
// sent traffic now. Liveness (GET /healthz) is only "the process answers".
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "service/latentd_service.h"

namespace latentd::service {
namespace {

// kUnavailable naming `what` and `path` unless `path` is writable by this
// process (access(2): permissions, a read-only file system, a removed path).
absl::Status CheckWritable(const char* what, const std::string& path) {
  if (::access(path.c_str(), W_OK) == 0) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      what, " ", path, " is not writable: ", std::strerror(errno)));
}

// kUnavailable unless the file system holding `dir` has `need` bytes free
// for this process (a full disk passes access(2), and every append fails).
absl::Status CheckFreeSpace(const std::string& dir, uint64_t need) {
  struct statvfs fs;
  if (::statvfs(dir.c_str(), &fs) != 0) {
    return absl::UnavailableError(
        absl::StrCat("data directory ", dir,
                     ": cannot stat its file system: ", std::strerror(errno)));
  }
  const uint64_t free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free >= need) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "data directory ", dir, ": its file system has ", free,
      " bytes free, under the ", need,
      " an ingest may need (2 x max-body-bytes): ingest would fail"));
}

}  // namespace

absl::Status LatentdService::Readiness() const {
  if (ingest_.stopping()) return absl::UnavailableError("shutting down");
  if (!topics_) {  // a graph-only node: its model is loaded at Open
    if (options_.cluster_mode && !graph_->joined()) {
      return absl::UnavailableError("still joining its cluster");
    }
    absl::Status s = CheckWritable("data directory", options_.data_dir);
    if (s.ok()) {
      s = CheckFreeSpace(options_.data_dir, 2 * options_.max_text_bytes);
    }
    return s;
  }
  if (view() == nullptr) return absl::UnavailableError("no model loaded yet");
  if (options_.cluster_mode && router_.link() == nullptr) {
    return absl::UnavailableError("still joining its cluster");
  }
  if (router_.failed()) {
    const std::string failure = router_.failure();
    return absl::UnavailableError(absl::StrCat(
        "this cluster node stopped sampling", failure.empty() ? "" : ": ",
        failure, " (restart the cluster)"));
  }
  // Ingest appends to the log; merges and compaction write new files in
  // the data directory and rename them.
  absl::Status s = CheckWritable("ingest log", ingest_.log_path());
  if (s.ok()) s = CheckWritable("data directory", options_.data_dir);
  if (s.ok())
    s = CheckFreeSpace(options_.data_dir, 2 * options_.max_text_bytes);
  return s;
}

std::string LatentdService::SamplingStoppedReason() const {
  return training_.SamplingStoppedReason();
}

}  // namespace latentd::service
