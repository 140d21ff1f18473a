#include "cli/daemon_wait.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace latentd {

using service::ApiClient;
using service::Method;

bool IsConnectionRefused(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable) return false;
  // sync/transport/transport.cc (TCP): "cannot connect to H:P: Connection
  // refused"; service/api_client.cc (HTTP): httplib's "Could not establish
  // connection".
  return absl::StrContains(status.message(), "Connection refused") ||
         absl::StrContains(status.message(), "Could not establish connection");
}

WaitingApiClient::WaitingApiClient(
    std::unique_ptr<ApiClient> first, Connect connect, absl::Duration wait,
    std::function<void(const absl::Status&)> notice)
    : connect_(std::move(connect)),
      wait_(wait),
      notice_(std::move(notice)),
      client_(std::move(first)) {}

absl::Status WaitingApiClient::Call(Method method,
                                    const google::protobuf::Message& request,
                                    google::protobuf::Message* response) {
  const absl::Time deadline = absl::Now() + wait_;
  bool waited = false;
  for (;;) {
    if (client_ == nullptr) {
      LATENTD_ASSIGN_OR_RETURN(client_, connect_());
    }
    absl::Status s = client_->Call(method, request, response);
    if (s.ok()) {
      answered_ = true;
      return s;
    }
    if (answered_ || !IsConnectionRefused(s)) return s;
    if (absl::Now() + absl::Milliseconds(200) > deadline) {
      if (!waited) return s;
      return absl::Status(
          s.code(),
          absl::StrCat(s.message(), " (waited ", absl::FormatDuration(wait_),
                       " for the daemon to listen: --wait)"));
    }
    if (!waited && notice_) notice_(s);
    waited = true;
    // A new client: the TCP one backs off after a failed connect.
    client_.reset();
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::StatusOr<api::StatusResponse> WaitMerged(
    ApiClient& api, const api::IngestResponse& ingested,
    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  const uint64_t last = ingested.last_sequence();
  bool merged = false;
  std::optional<uint64_t> view_after_merge;
  for (;;) {
    api::StatusResponse st;
    LATENTD_RETURN_IF_ERROR(
        api.Call(Method::kStatus, api::StatusRequest(), &st));
    // Acknowledged records stay pending until a view holding them is
    // published, so none pending means ours are visible.
    if (last == 0 || st.pending() == 0) return st;
    const uint64_t view = st.version().view();
    if (view_after_merge.has_value() && view > *view_after_merge) return st;
    // The view of a Status asked after the merge was seen may still be the
    // one before it; any later view was published after the merge.
    if (merged && !view_after_merge.has_value()) view_after_merge = view;
    if (st.merged_sequence() >= last) merged = true;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "documents through ingest sequence %d not in the model after %s "
          "(merged through %d, %d pending, training: %s): raise "
          "--merge-timeout, or check the daemon's log",
          last, absl::FormatDuration(timeout), st.merged_sequence(),
          st.pending(), st.training() ? "yes" : "no"));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace latentd
