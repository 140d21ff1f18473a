#include "service/cluster/epoch_phases.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

std::string EpochPhases::Set(const char* phase, uint64_t epoch) const {
  return absl::StrCat("latentd:", cluster_, ":", phase, ":", epoch);
}

absl::Status EpochPhases::Mark(sync::RedisClient* redis, const char* phase,
                               uint64_t epoch) const {
  const std::string set = Set(phase, epoch);
  LATENTD_RETURN_IF_ERROR(redis->Command({"SADD", set, node_id_}).status());
  return redis->Command({"EXPIRE", set, "604800"}).status();  // a week
}

absl::Status EpochPhases::MarkAll(sync::RedisClient* redis, const char* phase,
                                  const hashring::RingConfig& config) const {
  const std::string set = Set(phase, config.version);
  std::vector<std::string> cmd = {"SADD", set};
  for (const hashring::Member& m : config.members) cmd.push_back(m.id);
  if (cmd.size() == 2) return absl::OkStatus();
  LATENTD_RETURN_IF_ERROR(redis->Command(cmd).status());
  return redis->Command({"EXPIRE", set, "604800"}).status();  // a week
}

absl::Status EpochPhases::MarkRange(sync::RedisClient* redis, const char* phase,
                                    uint64_t from, uint64_t to) const {
  for (uint64_t e = std::max(from + 1, to > 1000 ? to - 999 : 1); e <= to;
       ++e) {
    LATENTD_RETURN_IF_ERROR(Mark(redis, phase, e));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> EpochPhases::NotIn(
    sync::RedisClient* redis, const char* phase, uint64_t epoch,
    const hashring::RingConfig& members,
    const std::vector<std::string>& skip) const {
  LATENTD_ASSIGN_OR_RETURN(sync::RedisReply done,
                           redis->Command({"SMEMBERS", Set(phase, epoch)}));
  std::vector<std::string> missing;
  for (const hashring::Member& m : members.members) {
    if (m.id == node_id_) continue;
    if (std::find(skip.begin(), skip.end(), m.id) != skip.end()) continue;
    bool in = false;
    for (const sync::RedisReply& e : done.elements) in |= e.str == m.id;
    if (!in) missing.push_back(m.id);
  }
  return missing;
}

absl::StatusOr<std::vector<std::string>> EpochPhases::In(
    sync::RedisClient* redis, const char* phase, uint64_t epoch) const {
  LATENTD_ASSIGN_OR_RETURN(sync::RedisReply set,
                           redis->Command({"SMEMBERS", Set(phase, epoch)}));
  std::vector<std::string> ids;
  for (const sync::RedisReply& e : set.elements) ids.push_back(e.str);
  return ids;
}

absl::StatusOr<bool> EpochPhases::EndMoveIfAllInEffect(
    sync::RedisClient* redis, const hashring::RingConfig& config) const {
  LATENTD_ASSIGN_OR_RETURN(std::vector<std::string> waiting,
                           NotIn(redis, "effect", config.version, config));
  if (!waiting.empty()) return false;
  absl::StatusOr<sync::MoveRecord> done =
      sync::FinishMove(redis, cluster_, config.version, sync::MoveCounters{});
  if (absl::IsFailedPrecondition(done.status())) return false;  // ended
  LATENTD_RETURN_IF_ERROR(done.status());
  return true;
}

absl::Status EpochPhases::Await(sync::RedisClient* redis,
                                const hashring::RingConfig& config,
                                const char* phase, absl::Time deadline) const {
  for (;;) {
    LATENTD_ASSIGN_OR_RETURN(std::vector<std::string> missing,
                             NotIn(redis, phase, config.version, config));
    if (missing.empty()) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("epoch ", config.version, ": member ", missing.front(),
                       " is not in ", Set(phase, config.version), " in time"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace latentd
