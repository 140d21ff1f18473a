// ClusterLink's failure detection and failover (cluster_link.h): the
// liveness thread (heartbeats, alive key, detection; a down node's
// return: cluster_link_join.cc).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "service/cluster/cluster_link.h"
#include "service/cluster/failure_judge.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

bool ClusterLink::SleepUnlessStopping(absl::Duration d) {
  absl::MutexLock l(&stop_mu_);
  auto stop = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(stop_mu_) { return stopping_; };
  stop_mu_.AwaitWithTimeout(absl::Condition(&stop), d);
  return !stopping_;
}

void ClusterLink::LivenessLoop() {
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
  FailureJudge judge(
      node_id_, timeout, options_.failover_grace, absl::Now(),
      [this](const std::string& id) { return clocks_->Heard(id); });
  auto lost = [&](const absl::Status& why) {
    if (lost_at != absl::InfiniteFuture()) return;
    lost_at = absl::Now();
    options_.log(absl::StrCat("Redis unreachable (", why.message(),
                              "): training goes on with ring epoch ", epoch(),
                              "; no membership change until it is back"));
  };
  // The first beat at once: a restarted node must beat before anyone
  // looks at its heartbeat again.
  for (bool first = true; first || SleepUnlessStopping(every); first = false) {
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
    sync::Heartbeat beat;
    beat.sweep = sweep();
    beat.keys = owner_->num_keys();
    beat.documents = documents_.load(std::memory_order_relaxed);
    beat.epoch = epoch();
    const sync::OwnerShardStats st = owner_->stats();
    beat.senders_retracted = st.senders_retracted;
    beat.reseed_refused = st.batches_reseed_refused;
    beat.stale_refused = st.batches_stale_refused;
    beat.under_replicated = replication_stats().keys_under_replicated;
    beat.failovers = failovers();
    beat.last_failover_ms =
        failovers() == 0 ? -1 : last_failover_us_.load() / 1000;
    absl::Status s = sync::WriteHeartbeat(redis.get(), options_.cluster,
                                          node_id_, beat, timeout);
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
            absl::ToDoubleSeconds(absl::Now() - lost_at), epoch(),
            absl::FormatDuration(timeout)));
        lost_at = absl::InfiniteFuture();
      }
    }
    if (s.ok() && timeout > absl::ZeroDuration() && ready_.load() &&
        !leaving_.load() && !declared_down_.load()) {
      s = DetectFailure(redis.get(), &judge, absl::Now() >= detect_from);
    }
    if (absl::IsUnavailable(s)) {
      lost(s);
      redis.reset();
    }
  }
}

absl::Status ClusterLink::DetectFailure(sync::RedisClient* redis,
                                        FailureJudge* judge, bool may_declare) {
  LATENTD_ASSIGN_OR_RETURN(sync::ClusterStatus st,
                           sync::ReadClusterStatus(redis, options_.cluster));
  const FailureJudge::Verdict v = judge->Judge(st, absl::Now(), may_declare);
  if (!v.note.empty()) options_.log(v.note);
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

absl::Status ClusterLink::MarkPhases(sync::RedisClient* redis,
                                     const char* phase, uint64_t from,
                                     uint64_t to) {
  for (uint64_t e = std::max(from + 1, to > 1000 ? to - 999 : 1); e <= to;
       ++e) {
    LATENTD_RETURN_IF_ERROR(MarkPhase(redis, phase, e));
  }
  return absl::OkStatus();
}

}  // namespace latentd
