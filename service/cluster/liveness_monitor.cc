#include "service/cluster/liveness_monitor.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "service/cluster/failure_judge.h"
#include "sync/control/drain.h"

namespace latentd {

void LivenessMonitor::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void LivenessMonitor::Stop() {
  stop_.Stop();
  if (thread_.joinable()) thread_.join();
}

void LivenessMonitor::Loop() {
  const absl::Duration timeout = options_.failure_timeout;
  const absl::Duration every =
      timeout > absl::ZeroDuration()
          ? std::clamp(timeout / 5, absl::Milliseconds(20), absl::Seconds(1))
          : absl::Seconds(1);
  std::unique_ptr<sync::RedisClient> redis;
  absl::Time detect_from = absl::InfinitePast();
  // Since when Redis has been unreachable (InfiniteFuture: it is not), and
  // whether this connection has written a heartbeat yet.
  absl::Time lost_at = absl::InfiniteFuture();
  bool beaten = false;
  FailureJudge judge(parts_.node_id, timeout, options_.failover_grace,
                     absl::Now(), parts_.heard_from);
  auto lost = [&](const absl::Status& why) {
    if (lost_at != absl::InfiniteFuture()) return;
    lost_at = absl::Now();
    options_.log(absl::StrCat("Redis unreachable (", why.message(),
                              "): training goes on with ring epoch ",
                              parts_.epoch(),
                              "; no membership change until it is back"));
  };
  // The first beat at once: a restarted node must beat before anyone
  // looks at its heartbeat again.
  for (bool first = true; first || stop_.SleepUnlessStopped(every);
       first = false) {
    if (redis == nullptr) {
      // Redis away: training goes on with the ring this node has; nobody
      // is declared down meanwhile (nobody can write an epoch).
      absl::StatusOr<std::unique_ptr<sync::RedisClient>> r =
          sync::RedisClient::Connect(options_.redis_url);
      if (!r.ok()) {
        lost(r.status());
        continue;
      }
      redis = std::move(*r);
      beaten = false;
    }
    const sync::Heartbeat beat = parts_.heartbeat();
    absl::Status s = sync::WriteHeartbeat(redis.get(), options_.cluster,
                                          parts_.node_id, beat, timeout);
    if (s.ok() && !beaten) {
      // Connected (at start, or back after an outage): every heartbeat in
      // Redis may be old, this node's too. Give the others a failure
      // timeout from this node's first beat to beat again before judging
      // them. (Not from the connection: a Redis still loading its file
      // refuses the beat.)
      beaten = true;
      detect_from = absl::Now() + timeout;
      if (lost_at != absl::InfiniteFuture()) {
        options_.info(absl::StrFormat(
            "Redis back after %.1f s: heartbeat written again (ring epoch "
            "%d); judging the others' heartbeats again in %s",
            absl::ToDoubleSeconds(absl::Now() - lost_at), parts_.epoch(),
            absl::FormatDuration(timeout)));
        lost_at = absl::InfiniteFuture();
      }
    }
    if (s.ok()) s = ReadDrain(redis.get());
    if (s.ok() && timeout > absl::ZeroDuration() && parts_.may_judge()) {
      s = DetectFailure(redis.get(), &judge, absl::Now() >= detect_from);
    }
    if (absl::IsUnavailable(s)) {
      lost(s);
      redis.reset();
    }
  }
}

absl::Status LivenessMonitor::ReadDrain(sync::RedisClient* redis) {
  LATENTD_ASSIGN_OR_RETURN(bool drain,
                           sync::DrainRequested(redis, options_.cluster));
  if (drain_requested_.exchange(drain) != drain) {
    options_.info(drain ? "cluster drain requested: sampling pauses while "
                          "every change is pushed and pulled"
                        : "cluster drain ended: sampling resumes");
  }
  return absl::OkStatus();
}

absl::Status LivenessMonitor::DetectFailure(sync::RedisClient* redis,
                                            FailureJudge* judge,
                                            bool may_declare) {
  LATENTD_ASSIGN_OR_RETURN(sync::ClusterStatus st,
                           sync::ReadClusterStatus(redis, options_.cluster));
  const FailureJudge::Verdict v = judge->Judge(st, absl::Now(), may_declare);
  if (!v.note.empty()) (v.note_is_info ? options_.info : options_.log)(v.note);
  if (v.down.empty()) return absl::OkStatus();
  int64_t beat_ms = st.now_ms;
  for (const sync::MemberStatus& m : st.members) {
    if (m.id == v.down && m.heartbeat) beat_ms = m.heartbeat->unix_ms;
  }
  absl::StatusOr<hashring::RingConfig> next = sync::DeclareDown(
      redis, options_.cluster, v.down, options_.failure_timeout);
  if (next.ok()) {
    options_.log(absl::StrFormat(
        "declared %s down (no heartbeat for %.2f s, more than the failure "
        "timeout %s): ring epoch %d -> %d without it; its counts %s "
        "until it returns",
        v.down, (st.now_ms - beat_ms) / 1000.0,
        absl::FormatDuration(options_.failure_timeout), st.epoch, next->version,
        options_.key_replicas > 1 ? "stay in the model (its keys' copies)"
                                  : "leave the model"));
  } else if (absl::IsUnavailable(next.status())) {
    return next.status();
  } else if (!absl::IsFailedPrecondition(next.status()) &&
             !absl::IsAborted(next.status())) {
    // (Another member won the race, or the node beat meanwhile.)
    options_.log(absl::StrCat("declaring ", v.down,
                              " down failed: ", next.status().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace latentd
