// Waiting for a daemon, so that scripted sequences work without sleeps:
// connecting to a latentd that is still starting (latentctl --wait), and
// waiting until ingested documents are part of the model the queries read
// (latentctl ingest --wait-merged).
//
// Thread-safety: a WaitingApiClient's Call() may be made from one thread at
// a time; WaitMerged is reentrant.
#ifndef LATENTD_CLI_DAEMON_WAIT_H_
#define LATENTD_CLI_DAEMON_WAIT_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "service/api.pb.h"
#include "service/api_client.h"

namespace latentd {

// True for the errors of a daemon that does not listen (yet): a refused
// TCP connection ("Connection refused") or an HTTP connection that could
// not be established. Not for a daemon that answers, however badly.
bool IsConnectionRefused(const absl::Status& status);

// An ApiClient that, until one call has succeeded, retries a call refused
// as IsConnectionRefused every 0.2 s for up to `wait` (a daemon binds its
// ports only once its model is loaded), each time through a new client
// from `connect` (which sets the token). Once a call succeeded, or the wait
// is over, errors come back as they are (`first` is the client of the first
// try); the last one after a wait says
// how long it waited. `notice` (may be null) is called once, with a line
// for people, when the first retry begins.
class WaitingApiClient : public service::ApiClient {
 public:
  using Connect =
      std::function<absl::StatusOr<std::unique_ptr<service::ApiClient>>()>;
  WaitingApiClient(std::unique_ptr<service::ApiClient> first, Connect connect,
                   absl::Duration wait,
                   std::function<void(const absl::Status&)> notice);

  absl::Status Call(service::Method method,
                    const google::protobuf::Message& request,
                    google::protobuf::Message* response) override;

 private:
  Connect connect_;
  absl::Duration wait_;
  std::function<void(const absl::Status&)> notice_;
  std::unique_ptr<service::ApiClient> client_;
  bool answered_ = false;  // a call has succeeded: no more waiting
};

// Polls the daemon's Status (every 0.1 s, at most `timeout`) until the
// documents an Ingest answered with `ingested` (its first/last_sequence in
// the daemon's ingest log) are merged and published, so that the queries
// that follow (GetUserProfile, InferDocument, ...) see them. Done when
// Status says nothing is pending, or once a view newer than the one seen
// right after mergedSequence reached last_sequence is published (the view
// is published after the merge, on the training thread). Nothing to wait
// for when the node logged none (last_sequence 0: duplicates, or documents
// forwarded to their owners in a cluster). kDeadlineExceeded naming the
// sequence and what Status said after `timeout`. Returns the last Status.
absl::StatusOr<api::StatusResponse> WaitMerged(
    service::ApiClient& api, const api::IngestResponse& ingested,
    absl::Duration timeout);

}  // namespace latentd

#endif  // LATENTD_CLI_DAEMON_WAIT_H_
