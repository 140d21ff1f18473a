#ifndef LATENTD_TESTS_SERVICE_DAEMON_HARNESS_INL_H_
#define LATENTD_TESTS_SERVICE_DAEMON_HARNESS_INL_H_

#include <chrono>
#include <thread>

namespace latentd::testing {

template <typename Pred>
absl::StatusOr<api::StatusResponse> WaitStatus(service::ApiClient* c, Pred pred,
                                               double timeout_s) {
  const auto end =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
  api::StatusResponse last;
  absl::Status s;
  while (std::chrono::steady_clock::now() < end) {
    api::StatusResponse r;
    s = c->Call(service::Method::kStatus, api::StatusRequest(), &r);
    if (s.ok()) {
      last = r;
      if (pred(r)) return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!s.ok()) return s;
  return absl::DeadlineExceededError("status condition not reached: " +
                                     last.ShortDebugString());
}

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_DAEMON_HARNESS_INL_H_
