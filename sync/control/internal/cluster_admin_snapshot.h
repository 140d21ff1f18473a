// Internal to sync/cluster_admin*.cc: the control-plane snapshot every
// change reads first, the script runner and the argument checks
// (cluster_admin.cc defines them). Not a public header.
#ifndef LATENTD_SYNC_CONTROL_INTERNAL_CLUSTER_ADMIN_SNAPSHOT_H_
#define LATENTD_SYNC_CONTROL_INTERNAL_CLUSTER_ADMIN_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hashring/ring_config.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"

namespace latentd::sync::internal {

using FlatHash = std::map<std::string, std::string>;

// Everything the read script returns, parsed and checked.
struct Snapshot {
  std::string ring_bytes;  // "" without a ring
  std::optional<hashring::RingConfig> ring;
  std::map<std::string, MemberState> states;  // active | leaving
  FlatHash pending;                           // id -> address
  FlatHash members;                           // id -> address
  std::map<std::string, Heartbeat> heartbeats;
  std::optional<MoveRecord> move;
  int64_t now_ms = 0;

  const hashring::Member* InRing(const std::string& id) const {
    if (!ring) return nullptr;
    for (const auto& m : ring->members) {
      if (m.id == id) return &m;
    }
    return nullptr;
  }
  MemberState StateOf(const std::string& id) const {
    auto it = states.find(id);
    return it == states.end() ? MemberState::kActive : it->second;
  }
  bool MoveRunning() const {
    return move && move->status == MoveStatus::kRunning;
  }
};

absl::string_view Sv(std::string_view s);
// An id or address quoted so any bytes print safely.
std::string Quote(std::string_view s);
absl::Status ValidateCluster(std::string_view cluster);
absl::Status ValidateId(std::string_view id);
absl::Status ValidateAddress(std::string_view address);
absl::Status ValidateEpoch(uint64_t epoch);
absl::Status ValidateCounters(const MoveCounters& c);
absl::Status Corrupt(absl::string_view key, absl::string_view what);
absl::StatusOr<std::optional<MoveRecord>> ParseMove(const RedisReply& flat,
                                                    const std::string& key);

// Runs `script` (after the prelude) over the cluster's keys (and `extra`,
// if not empty, after them). A connection failure stays kUnavailable; a
// Redis error reply is kInternal with Redis's words.
absl::StatusOr<RedisReply> Eval(RedisClient* redis, const ClusterKeys& keys,
                                const char* script,
                                const std::vector<std::string>& args,
                                const std::string& extra = "");
// The status for a script's non-'ok' reply (`id`: the node it was about).
absl::Status Refused(const RedisReply& r, const ClusterKeys& keys,
                     std::string_view id);
absl::StatusOr<Snapshot> ReadSnapshot(RedisClient* redis,
                                      const ClusterKeys& keys);
absl::Status RequireRing(const Snapshot& s, std::string_view cluster);
absl::Status RequireNoMove(const Snapshot& s);

// The next epoch: `s`'s ring with member `id` at `address` added,
// committed by `script` (kAdmitScript or kReturnScript; ARGV: expected
// ring, new ring, from epoch, to epoch, id, address). `verb` ("admitting")
// names the change when the new ring is invalid (kFailedPrecondition).
// AdmitNode's and ReturnNode's commit (cluster_admin_failover.cc).
absl::StatusOr<hashring::RingConfig> AddMember(
    RedisClient* redis, const ClusterKeys& keys, const Snapshot& s,
    const std::string& id, const std::string& address, const char* script,
    const char* verb, const ClusterAdminOptions& options);

// RemoveNode(kLost) of down node `id` (cluster_admin_failover.cc).
absl::StatusOr<hashring::RingConfig> ForgetDown(
    RedisClient* redis, const ClusterKeys& keys, const Snapshot& s,
    const std::string& id, const ClusterAdminOptions& options);

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_CONTROL_INTERNAL_CLUSTER_ADMIN_SNAPSHOT_H_
