// How a move ends other than done (sync/control/cluster_admin.h): failed
// (FailMove), and the two-phase hand-off of remove-node --handoff
// (CommitHandoff): one decision per attempt, committed or rolled back,
// written in Redis by the leaving node and read by receivers that missed
// it.
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/internal/cluster_admin_scripts.h"
#include "sync/control/internal/cluster_admin_snapshot.h"

namespace latentd::sync {

using internal::Eval;
using internal::Quote;
using internal::ReadSnapshot;
using internal::Refused;
using internal::RequireRing;
using internal::Snapshot;
using internal::ValidateCluster;
using internal::ValidateEpoch;
using internal::ValidateId;

namespace {

// A hand-off script: the handoff prelude, then `script` (Eval adds the
// common prelude before both).
std::string HandoffScript(const char* script) {
  return absl::StrCat(internal::kHandoffPrelude, script);
}

std::string Attempt(std::string_view id, uint64_t epoch) {
  return absl::StrCat(Quote(id), " in drain epoch ", epoch);
}

}  // namespace

absl::Status FailMove(RedisClient* redis, std::string_view cluster,
                      uint64_t to_epoch, std::string_view reason) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateEpoch(to_epoch));
  if (reason.empty() || reason.size() > 4096) {
    return absl::InvalidArgumentError(
        "a move's failure reason must be 1..4096 bytes");
  }
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r,
      Eval(redis, keys, internal::kFailScript,
           {std::to_string(to_epoch), std::string(reason)}, keys.handoffs));
  if (r.elements[0].str == "committed") {
    return absl::FailedPreconditionError(absl::StrCat(
        "the move to epoch ", to_epoch,
        " is a hand-off that was committed: it only completes forward "
        "(restart the leaving node to finish it)"));
  }
  return r.elements[0].str == "ok" ? absl::OkStatus() : Refused(r, keys, "");
}

absl::Status CommitHandoff(RedisClient* redis, std::string_view cluster,
                           std::string_view id, uint64_t to_epoch) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  LATENTD_RETURN_IF_ERROR(ValidateEpoch(to_epoch));
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r,
      Eval(redis, keys, HandoffScript(internal::kCommitHandoffScript).c_str(),
           {std::string(id), std::to_string(to_epoch)}, keys.handoffs));
  if (r.elements[0].str == "ok") return absl::OkStatus();
  if (r.elements[0].str == "rolled_back") {
    return absl::FailedPreconditionError(absl::StrCat(
        "the hand-off of ", Attempt(id, to_epoch), " was rolled back"));
  }
  return Refused(r, keys, id);
}

absl::StatusOr<hashring::RingConfig> RollBackHandoff(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    uint64_t to_epoch, std::string_view reason,
    const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  LATENTD_RETURN_IF_ERROR(ValidateEpoch(to_epoch));
  if (reason.empty() || reason.size() > 4096) {
    return absl::InvalidArgumentError(
        "a rollback's reason must be 1..4096 bytes");
  }
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
  LATENTD_RETURN_IF_ERROR(RequireRing(s, cluster));
  hashring::RingConfig next = *s.ring;
  next.version = s.ring->version + 1;
  if (options.before_commit) options.before_commit();
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r,
      Eval(redis, keys, HandoffScript(internal::kRollBackHandoffScript).c_str(),
           {s.ring_bytes, hashring::SerializeRingConfig(next),
            std::to_string(to_epoch), std::to_string(next.version),
            std::string(id), std::string(reason)},
           keys.handoffs));
  if (r.elements[0].str == "ok") return next;
  if (r.elements[0].str == "committed") {
    return absl::FailedPreconditionError(
        absl::StrCat("the hand-off of ", Attempt(id, to_epoch),
                     " was committed: it completes, it is not rolled back"));
  }
  return Refused(r, keys, id);
}

absl::StatusOr<HandoffOutcome> ReadHandoffOutcome(RedisClient* redis,
                                                  std::string_view cluster,
                                                  std::string_view id,
                                                  uint64_t epoch) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  LATENTD_RETURN_IF_ERROR(ValidateEpoch(epoch));
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r,
      Eval(redis, keys, HandoffScript(internal::kHandoffOutcomeScript).c_str(),
           {std::string(id), std::to_string(epoch)}, keys.handoffs));
  if (r.elements[0].str != "ok") return Refused(r, keys, id);
  const std::string got = r.elements.size() > 1 ? r.elements[1].str : "";
  if (got == "committed") return HandoffOutcome::kCommitted;
  if (got == "undecided") return HandoffOutcome::kUndecided;
  if (got == "rolled_back") return HandoffOutcome::kRolledBack;
  if (got == "ended") return HandoffOutcome::kUnknown;
  return internal::Corrupt(
      keys.handoffs, absl::StrCat("outcome '", got, "' of ", Attempt(id, epoch),
                                  " is unknown"));
}

}  // namespace latentd::sync
