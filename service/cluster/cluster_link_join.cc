// ClusterLink's way into its cluster (cluster_link.h): registering and
// waiting for admission, returning after a failover, and JoinRedis, the
// Redis connection all of that runs through (internal/join_redis.h), which
// rides out a brief Redis outage instead of failing the join.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "hashring/ring_config.h"
#include "service/cluster/cluster_link.h"
#include "service/cluster/internal/join_redis.h"
#include "sync/control/cluster_admin.h"

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

using internal::JoinRedis;

absl::StatusOr<hashring::RingConfig> ClusterLink::AwaitAdmission(
    JoinRedis& redis) {
  LATENTD_RETURN_IF_ERROR(redis.Run([&](sync::RedisClient* c) {
    return sync::RegisterPending(c, options_.cluster, node_id_, address_);
  }));
  options_.info(absl::StrCat("registered as pending in cluster ",
                             options_.cluster,
                             "; waiting to be admitted "
                             "(latentctl cluster add-node ",
                             node_id_, ")"));
  const std::string key = sync::RingKey(options_.cluster);
  const absl::Time deadline = absl::Now() + options_.join_timeout;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(
        sync::RedisReply reply,
        redis.Run<sync::RedisReply>([&](sync::RedisClient* c) {
          return c->Command({"GET", key});
        }));
    if (reply.type == sync::RedisReply::Type::kString) {
      LATENTD_ASSIGN_OR_RETURN(hashring::RingConfig config,
                               hashring::ParseRingConfig(reply.str));
      for (const hashring::Member& m : config.members) {
        if (m.id == node_id_) return config;
      }
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "not admitted to cluster ", options_.cluster, " within ",
          absl::FormatDuration(options_.join_timeout),
          " (admit it with latentctl cluster add-node ", node_id_, ")"));
    }
    absl::SleepFor(std::min(options_.ring_poll, absl::Milliseconds(100)));
  }
}

absl::StatusOr<bool> ClusterLink::IsDown(JoinRedis& redis) const {
  LATENTD_ASSIGN_OR_RETURN(
      sync::ClusterStatus st,
      redis.Run<sync::ClusterStatus>([&](sync::RedisClient* c) {
        return sync::ReadClusterStatus(c, options_.cluster);
      }));
  for (const sync::MemberStatus& m : st.members) {
    if (m.id == node_id_) return m.state == sync::MemberState::kDown;
  }
  return false;
}

absl::StatusOr<hashring::RingConfig> ClusterLink::AwaitReturn(
    JoinRedis& redis) {
  const absl::Time deadline = absl::Now() + options_.join_timeout;
  // A ReturnNode whose reply was lost may have gone through: then this
  // node is in the ring again, at its address (only ReturnNode puts a down
  // node back, and no other move starts while its return runs).
  bool maybe_returned = false;
  auto returned = [this](const hashring::RingConfig& ring) {
    options_.info(absl::StrCat(
        "this node was down (failed over): back in cluster ", options_.cluster,
        " at epoch ", ring.version,
        "; the members hand its keys back, then it pushes its store's "
        "counts"));
    return ring;
  };
  for (;;) {
    LATENTD_ASSIGN_OR_RETURN(
        sync::ClusterStatus st,
        redis.Run<sync::ClusterStatus>([&](sync::RedisClient* c) {
          return sync::ReadClusterStatus(c, options_.cluster);
        }));
    if (maybe_returned && st.ring.has_value()) {
      for (const hashring::Member& m : st.ring->members) {
        if (m.id == node_id_ && m.address == address_)
          return returned(*st.ring);
      }
    }
    absl::Status s;
    if (st.move && st.move->status == sync::MoveStatus::kRunning) {
      // The failover that marked it down may still run (or another move).
      s = absl::FailedPreconditionError(absl::StrCat(
          "a move is running: ", sync::DescribeMove(*st.move, st.now_ms)));
    } else {
      absl::StatusOr<hashring::RingConfig> ring =
          redis.Run<hashring::RingConfig>([&](sync::RedisClient* c) {
            return sync::ReturnNode(c, options_.cluster, node_id_, address_);
          });
      if (ring.ok()) return returned(*ring);
      s = ring.status();
      if (absl::IsDeadlineExceeded(s)) return s;  // Redis away too long
      if (redis.lost_reply()) {
        // A try before this answer may have put the node back: look again.
        maybe_returned = true;
      } else if (!absl::IsAborted(s) &&
                 !absl::StrContains(s.message(), "a move is")) {
        // A concurrent change (kAborted) or a move started meanwhile: try
        // again; anything else (it is no longer down, another address) is
        // final.
        return s;
      }
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "could not return to cluster ", options_.cluster, " within ",
          absl::FormatDuration(options_.join_timeout), ": ", s.message()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace latentd
