#include "service/cluster/internal/join_steps.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "sync/control/cluster_admin.h"

namespace latentd::internal {

absl::StatusOr<hashring::RingConfig> AwaitAdmission(
    JoinRedis& redis, const ClusterLinkOptions& options,
    const std::string& node_id, const std::string& address) {
  LATENTD_RETURN_IF_ERROR(redis.Run([&](sync::RedisClient* c) {
    return sync::RegisterPending(c, options.cluster, node_id, address);
  }));
  options.info(absl::StrCat("registered as pending in cluster ",
                            options.cluster,
                            "; waiting to be admitted "
                            "(latentctl cluster add-node ",
                            node_id, ")"));
  const std::string key = sync::RingKey(options.cluster);
  const absl::Time deadline = absl::Now() + options.join_timeout;
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
        if (m.id == node_id) return config;
      }
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "not admitted to cluster ", options.cluster, " within ",
          absl::FormatDuration(options.join_timeout),
          " (admit it with latentctl cluster add-node ", node_id, ")"));
    }
    absl::SleepFor(std::min(options.ring_poll, absl::Milliseconds(100)));
  }
}

absl::StatusOr<std::optional<sync::MemberState>> StateOf(
    JoinRedis& redis, const ClusterLinkOptions& options,
    const std::string& node_id) {
  LATENTD_ASSIGN_OR_RETURN(
      sync::ClusterStatus st,
      redis.Run<sync::ClusterStatus>([&](sync::RedisClient* c) {
        return sync::ReadClusterStatus(c, options.cluster);
      }));
  for (const sync::MemberStatus& m : st.members) {
    if (m.id == node_id) return m.state;
  }
  return std::nullopt;
}

absl::StatusOr<hashring::RingConfig> AwaitReturn(
    JoinRedis& redis, const ClusterLinkOptions& options,
    const std::string& node_id, const std::string& address) {
  const absl::Time deadline = absl::Now() + options.join_timeout;
  // A ReturnNode whose reply was lost may have gone through: then this
  // node is in the ring again, at its address (only ReturnNode puts a down
  // node back, and no other move starts while its return runs).
  bool maybe_returned = false;
  auto returned = [&options](const hashring::RingConfig& ring) {
    options.info(absl::StrCat(
        "this node was down (failed over): back in cluster ", options.cluster,
        " at epoch ", ring.version,
        "; the members hand its keys back, then it pushes its store's "
        "counts"));
    return ring;
  };
  for (;;) {
    LATENTD_ASSIGN_OR_RETURN(
        sync::ClusterStatus st,
        redis.Run<sync::ClusterStatus>([&](sync::RedisClient* c) {
          return sync::ReadClusterStatus(c, options.cluster);
        }));
    if (maybe_returned && st.ring.has_value()) {
      for (const hashring::Member& m : st.ring->members) {
        if (m.id == node_id && m.address == address) return returned(*st.ring);
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
            return sync::ReturnNode(c, options.cluster, node_id, address);
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
          "could not return to cluster ", options.cluster, " within ",
          absl::FormatDuration(options.join_timeout), ": ", s.message()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

namespace {

absl::Status CloseMove(JoinRedis& redis, const ClusterLinkOptions& options,
                       const EpochPhases& phases,
                       const hashring::RingConfig& config,
                       const std::string& self,
                       std::optional<sync::RemoveMode>* leave) {
  LATENTD_ASSIGN_OR_RETURN(
      sync::ClusterStatus st,
      redis.Run<sync::ClusterStatus>([&](sync::RedisClient* c) {
        return sync::ReadClusterStatus(c, options.cluster);
      }));
  if (!st.move.has_value() || st.move->status != sync::MoveStatus::kRunning ||
      st.move->to_epoch != config.version) {
    return absl::OkStatus();
  }
  // A remove in its drain phase is not ended so: the leaving node is still
  // in that ring, and its documents have not left it yet. It resumes.
  if (st.move->kind == sync::MoveKind::kRemove &&
      st.move->phase != sync::MovePhase::kKeys) {
    if (st.move->node == self) *leave = st.move->mode;
    return absl::OkStatus();
  }
  const std::string what = absl::StrCat(
      "the ", sync::MoveKindName(st.move->kind), " of ", st.move->node);
  // The keys this member owned before the add died with it: a joiner still
  // in its join must not take "handoff" for a hand-off (AwaitHandoffs). A
  // restarted joiner will not end the move: the members may ("rejoined").
  const bool add = st.move->kind == sync::MoveKind::kAdd;
  const char* restart_phase = st.move->node == self ? "rejoined" : "restarted";
  return redis.Run([&](sync::RedisClient* c) -> absl::Status {
    if (add) {
      LATENTD_RETURN_IF_ERROR(phases.Mark(c, restart_phase, config.version));
    }
    for (const char* phase : {"handoff", "effect"}) {
      LATENTD_RETURN_IF_ERROR(phases.Mark(c, phase, config.version));
    }
    LATENTD_ASSIGN_OR_RETURN(const bool ended,
                             phases.EndMoveIfAllInEffect(c, config));
    if (ended) {
      options.info(absl::StrCat("ring epoch ", config.version, ": ", what,
                                ", left running when its members stopped, "
                                "is done"));
    }
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status AwaitHandoffs(sync::RedisClient* redis, const EpochPhases& phases,
                           const hashring::RingConfig& config,
                           absl::Time deadline) {
  LATENTD_RETURN_IF_ERROR(phases.Await(redis, config, "handoff", deadline));
  LATENTD_ASSIGN_OR_RETURN(const std::vector<std::string> restarted,
                           phases.In(redis, "restarted", config.version));
  if (restarted.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "member ", restarted.front(),
      " restarted during this node's join "
      "(epoch ",
      config.version,
      "): the keys it owned died with it and were "
      "not handed off; restart this node, and every member re-seeds its "
      "keys"));
}

std::optional<sync::RemoveMode> ResumeInterruptedMove(
    JoinRedis& redis, const ClusterLinkOptions& options,
    const EpochPhases& phases, const hashring::RingConfig& config,
    const std::string& self) {
  std::optional<sync::RemoveMode> leave;
  absl::Status s = CloseMove(redis, options, phases, config, self, &leave);
  if (!s.ok()) {
    options.log(
        absl::StrCat("ring epoch ", config.version,
                     ": could not close a move left running: ", s.ToString()));
  }
  return leave;
}

}  // namespace latentd::internal
