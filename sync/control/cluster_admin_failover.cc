// The failover side of the control plane (sync/control/cluster_admin.h):
// declaring a member down, a down member's return, and removing a down member
// for good. Each change is one compare-and-set script, as in cluster_admin.cc.
#include <algorithm>
#include <string>
#include <utility>

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
using internal::RequireNoMove;
using internal::RequireRing;
using internal::Snapshot;
using internal::ValidateAddress;
using internal::ValidateCluster;
using internal::ValidateId;

absl::Status CheckFailoverQuorum(const ClusterStatus& status,
                                 std::string_view self,
                                 absl::Duration failure_timeout) {
  if (!status.ring) {
    return absl::FailedPreconditionError("the cluster has no ring yet");
  }
  const int64_t timeout_ms = absl::ToInt64Milliseconds(failure_timeout);
  size_t alive = 0;
  for (const hashring::Member& r : status.ring->members) {
    if (r.id == self) {
      ++alive;
      continue;
    }
    for (const MemberStatus& m : status.members) {
      if (m.id == r.id && m.heartbeat &&
          status.now_ms - m.heartbeat->unix_ms <= timeout_ms) {
        ++alive;
      }
    }
  }
  const size_t members = status.ring->members.size();
  if (2 * alive >= members) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("no failover quorum: ", alive, " of the ", members,
                   " members of ring epoch ", status.epoch,
                   " beat within the failure timeout (at least half must)"));
}

absl::StatusOr<hashring::RingConfig> DeclareDown(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    absl::Duration failure_timeout, const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  if (failure_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the failure timeout must be positive");
  }
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
  LATENTD_RETURN_IF_ERROR(RequireRing(s, cluster));
  const std::string sid(id);
  const hashring::Member* member = s.InRing(sid);
  if (member == nullptr || s.StateOf(sid) != MemberState::kActive) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", Quote(id), " is not an active member of epoch ",
                     s.ring->version, "; nothing was changed"));
  }
  const std::string address = member->address;
  LATENTD_RETURN_IF_ERROR(RequireNoMove(s));
  hashring::RingConfig next = *s.ring;
  std::erase_if(next.members,
                [&sid](const hashring::Member& m) { return m.id == sid; });
  if (next.members.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", Quote(id), " is the last member; nothing was changed"));
  }
  next.version = s.ring->version + 1;
  next.replication = std::min<uint32_t>(
      next.replication, static_cast<uint32_t>(next.members.size()));
  if (absl::Status v = hashring::ValidateRingConfig(next); !v.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("declaring ", Quote(id), " down: ", v.message()));
  }
  if (options.before_commit) options.before_commit();
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r,
      Eval(redis, keys, internal::kDownScript,
           {s.ring_bytes, hashring::SerializeRingConfig(next),
            std::to_string(s.ring->version), std::to_string(next.version), sid,
            std::to_string(std::max<int64_t>(
                1, absl::ToInt64Milliseconds(failure_timeout))),
            address},
           keys.Alive(sid)));
  if (r.elements[0].str != "ok") return Refused(r, keys, id);
  return next;
}

absl::StatusOr<hashring::RingConfig> ReturnNode(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    std::string_view address, const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  LATENTD_RETURN_IF_ERROR(ValidateAddress(address));
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
  LATENTD_RETURN_IF_ERROR(RequireRing(s, cluster));
  const std::string sid(id);
  if (s.InRing(sid) != nullptr || s.StateOf(sid) != MemberState::kDown ||
      s.states.count(sid) == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", Quote(id), " is not down in cluster ", Quote(cluster),
        " (epoch ", s.ring->version, "); nothing was changed"));
  }
  auto had = s.members.find(sid);
  if (had != s.members.end() && had->second != address) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", Quote(id), " was at ", Quote(had->second), ", not ",
        Quote(address),
        ": restart it there, or remove it for good (remove-node --lost) and "
        "join it as a new node"));
  }
  return internal::AddMember(redis, keys, s, sid, std::string(address),
                             internal::kReturnScript, "re-admitting", options);
}

namespace internal {

absl::StatusOr<hashring::RingConfig> AddMember(
    RedisClient* redis, const ClusterKeys& keys, const Snapshot& s,
    const std::string& id, const std::string& address, const char* script,
    const char* verb, const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(RequireNoMove(s));
  hashring::RingConfig next = *s.ring;
  next.members.push_back({id, address, 1});
  next.version = s.ring->version + 1;
  if (absl::Status v = hashring::ValidateRingConfig(next); !v.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(verb, " ", Quote(id), ": ", v.message()));
  }
  if (options.before_commit) options.before_commit();
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r, Eval(redis, keys, script,
                         {s.ring_bytes, hashring::SerializeRingConfig(next),
                          std::to_string(s.ring->version),
                          std::to_string(next.version), id, address}));
  if (r.elements[0].str != "ok") return Refused(r, keys, id);
  return next;
}

absl::StatusOr<hashring::RingConfig> ForgetDown(
    RedisClient* redis, const ClusterKeys& keys, const Snapshot& s,
    const std::string& id, const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(RequireNoMove(s));
  hashring::RingConfig next = *s.ring;
  next.version = s.ring->version + 1;
  if (options.before_commit) options.before_commit();
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r, Eval(redis, keys, kForgetDownScript,
                         {s.ring_bytes, hashring::SerializeRingConfig(next),
                          std::to_string(s.ring->version),
                          std::to_string(next.version), id}));
  if (r.elements[0].str != "ok") return Refused(r, keys, id);
  return next;
}

}  // namespace internal
}  // namespace latentd::sync
