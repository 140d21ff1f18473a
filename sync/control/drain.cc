#include "sync/control/drain.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace latentd::sync {

absl::Status SetDrain(RedisClient* redis, std::string_view cluster,
                      bool drain) {
  const ClusterKeys keys(cluster);
  std::vector<std::string> command = {"DEL", keys.drain};
  if (drain) command = {"SET", keys.drain, "1"};
  return redis->Command(command).status();
}

absl::StatusOr<bool> DrainRequested(RedisClient* redis,
                                    std::string_view cluster) {
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(RedisReply r, redis->Command({"GET", keys.drain}));
  return r.type == RedisReply::Type::kString;
}

Settlement ReadSettlement(const ClusterStatus& status) {
  Settlement out;
  // The checksums reported, with the members reporting each.
  std::map<uint64_t, std::vector<std::string>> by_checksum;
  for (const MemberStatus& m : status.members) {
    if (!m.in_ring) continue;
    if (!m.heartbeat) {
      out.waiting.push_back(absl::StrCat(m.id, ": no heartbeat"));
    } else if (m.heartbeat->stopped_failed) {
      out.waiting.push_back(absl::StrCat(
          m.id,
          ": stopped sampling after a failure, its table is not the "
          "cluster's (its /readyz and log say why; restart it from its data "
          "directory)"));
    } else if (m.heartbeat->settled_checksum == 0) {
      out.waiting.push_back(
          absl::StrCat(m.id, ": still draining (changes to send or receive)"));
    } else {
      by_checksum[m.heartbeat->settled_checksum].push_back(m.id);
    }
  }
  if (by_checksum.size() > 1) {
    for (const auto& [checksum, ids] : by_checksum) {
      for (const std::string& id : ids) {
        out.waiting.push_back(absl::StrCat(id, ": table checksum ",
                                           absl::Hex(checksum),
                                           ", not every member's"));
      }
    }
  }
  out.settled = out.waiting.empty() && by_checksum.size() == 1;
  if (out.settled) out.checksum = by_checksum.begin()->first;
  return out;
}

}  // namespace latentd::sync
