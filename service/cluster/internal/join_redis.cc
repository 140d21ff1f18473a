#include "service/cluster/internal/join_redis.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace latentd {
namespace internal {

bool IsTransientRedisError(const absl::Status& s) {
  if (absl::IsUnavailable(s)) return true;
  if (!absl::IsFailedPrecondition(s)) return false;
  // Error replies of a Redis that is up but cannot answer yet (loading its
  // file, running a long script, failing over).
  for (const char* busy : {"redis: LOADING", "redis: BUSY ", "redis: TRYAGAIN",
                           "redis: MASTERDOWN"}) {
    if (absl::StartsWith(s.message(), busy)) return true;
  }
  return false;
}

JoinRedis::JoinRedis(JoinRedisOptions options) : options_(std::move(options)) {
  options_.min_backoff = std::max(options_.min_backoff, absl::Milliseconds(1));
  options_.max_backoff = std::max(options_.max_backoff, options_.min_backoff);
}

absl::Status JoinRedis::Run(
    absl::FunctionRef<absl::Status(sync::RedisClient*)> step) {
  lost_reply_ = false;
  absl::Duration backoff = options_.min_backoff;
  absl::Time lost_at = absl::InfiniteFuture();
  for (;;) {
    absl::Status s;
    bool ran = false;
    if (redis_ == nullptr) {
      absl::StatusOr<std::unique_ptr<sync::RedisClient>> c =
          sync::RedisClient::Connect(options_.url);
      if (c.ok()) {
        redis_ = *std::move(c);
      } else {
        s = c.status();
      }
    }
    if (redis_ != nullptr) {
      s = step(redis_.get());
      ran = true;
    }
    if (!IsTransientRedisError(s)) {
      if (lost_at != absl::InfiniteFuture()) {
        options_.info(absl::StrFormat(
            "Redis back after %.1f s: joining cluster %s goes on",
            absl::ToDoubleSeconds(absl::Now() - lost_at), options_.cluster));
      }
      return s;
    }
    // (A change sent on this connection may have been applied.)
    lost_reply_ |= ran;
    redis_.reset();
    const absl::Time now = absl::Now();
    if (lost_at == absl::InfiniteFuture()) {
      lost_at = now;
      ++outages_;
      options_.log(absl::StrCat(
          "Redis unreachable while joining: retrying every ",
          absl::FormatDuration(options_.min_backoff), " to ",
          absl::FormatDuration(options_.max_backoff), " for up to ",
          absl::FormatDuration(options_.give_up_after),
          " (--join-timeout; cluster ", options_.cluster, "): ", s.message()));
    }
    const absl::Duration left = lost_at + options_.give_up_after - now;
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "Redis unreachable while joining cluster ", options_.cluster, " for ",
          absl::FormatDuration(options_.give_up_after),
          " (--join-timeout); gave up: ", s.message()));
    }
    absl::SleepFor(std::min(backoff, left));
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace internal
}  // namespace latentd
