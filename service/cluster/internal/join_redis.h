// The Redis connection a node joins (or returns to) its cluster through
// (ClusterLink::Join; internal/join_steps.h): every step of the join runs
// through JoinRedis::Run, which retries the step while Redis is briefly
// away (docs/operations.md, "Network faults").
#ifndef LATENTD_SERVICE_CLUSTER_INTERNAL_JOIN_REDIS_H_
#define LATENTD_SERVICE_CLUSTER_INTERNAL_JOIN_REDIS_H_

#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/control/membership.h"
#include "sync/transport/transport.h"

namespace latentd::internal {

// Whether `s`, from RedisClient::Connect or a command, says Redis is
// briefly away rather than that the step is refused: kUnavailable (Redis
// unreachable, the connection refused, reset or timed out) and the error
// replies of a Redis that cannot answer yet (LOADING, BUSY, TRYAGAIN,
// MASTERDOWN). Anything else (a wrong password, a refused change, a ring
// that does not list the node) is final. Thread-safe (pure function).
bool IsTransientRedisError(const absl::Status& s);

struct JoinRedisOptions {
  std::string url;      // --cluster-redis
  std::string cluster;  // its name, for the log lines and errors
  // How long one outage may last before Run gives up (--join-timeout).
  absl::Duration give_up_after = absl::Seconds(60);
  // The wait between tries: from `min_backoff`, doubling, up to
  // `max_backoff`.
  absl::Duration min_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(1);
  sync::LogFn log = sync::LogToStderr;       // the outage (once per outage)
  sync::LogFn info = sync::LogInfoToStderr;  // Redis back
};

// A Redis connection that a transient failure (IsTransientRedisError)
// does not end: Run drops the connection, waits with a bounded backoff,
// connects again and runs the step again, until it succeeds, fails for
// good, or the outage has lasted `give_up_after`. It logs one line when an
// outage starts ("Redis unreachable while joining: retrying every ...") and
// one when Redis is back.
//
// Steps must be safe to run again: reads, idempotent writes, or changes
// whose retry is refused when the first try went through (sync/
// cluster_admin.h; the caller checks which, see lost_reply()).
//
// Thread-safety: not thread-safe (one connection); one thread uses it.
class JoinRedis {
 public:
  explicit JoinRedis(JoinRedisOptions options);

  // Runs `step` on a connection, as above. Returns its result, or the
  // first non-transient error, or kDeadlineExceeded ("Redis unreachable
  // while joining for ...: <last error>") once an outage has lasted
  // `give_up_after`.
  absl::Status Run(absl::FunctionRef<absl::Status(sync::RedisClient*)> step);
  template <typename T>
  absl::StatusOr<T> Run(
      absl::FunctionRef<absl::StatusOr<T>(sync::RedisClient*)> step) {
    absl::StatusOr<T> out = absl::UnknownError("not run");
    absl::Status s = Run([&](sync::RedisClient* redis) -> absl::Status {
      out = step(redis);
      return out.status();
    });
    if (!s.ok()) return s;
    return out;
  }

  // Whether the last Run met a transient failure at some try (so a
  // change it made may have gone through on a try whose reply was lost).
  bool lost_reply() const { return lost_reply_; }
  // Outages met so far (each logged once).
  int outages() const { return outages_; }

 private:
  JoinRedisOptions options_;
  std::unique_ptr<sync::RedisClient> redis_;
  bool lost_reply_ = false;
  int outages_ = 0;
};

}  // namespace latentd::internal

#endif  // LATENTD_SERVICE_CLUSTER_INTERNAL_JOIN_REDIS_H_
