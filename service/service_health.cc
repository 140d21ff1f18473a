// LatentdService::Readiness (GET /readyz): whether this node should be
// sent traffic now. Liveness (GET /healthz) is only "the process answers".
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

}  // namespace

absl::Status LatentdService::Readiness() const {
  {
    absl::MutexLock lock(&pending_mu_);
    if (stopping_) return absl::UnavailableError("shutting down");
  }
  if (!topics_) {  // a graph-only node: its model is loaded at Open
    if (options_.cluster_mode && !graph_->joined()) {
      return absl::UnavailableError("still joining its cluster");
    }
    return CheckWritable("data directory", options_.data_dir);
  }
  if (view() == nullptr) return absl::UnavailableError("no model loaded yet");
  if (options_.cluster_mode && JoinedLink() == nullptr) {
    return absl::UnavailableError("still joining its cluster");
  }
  if (cluster_failed_.load()) {
    return absl::UnavailableError(
        "this cluster node stopped sampling after a failed sweep (restart "
        "the cluster)");
  }
  // Ingest appends to the log; merges and compaction write new files in
  // the data directory and rename them.
  absl::Status s = CheckWritable("ingest log", log_->path());
  if (s.ok()) s = CheckWritable("data directory", options_.data_dir);
  return s;
}

}  // namespace latentd::service
