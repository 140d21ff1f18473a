#include "sync/control/cluster_admin.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "sync/control/drain.h"
#include "sync/control/internal/cluster_admin_scripts.h"
#include "sync/control/internal/cluster_admin_snapshot.h"
#include "sync/transport/transport.h"

namespace latentd::sync {
namespace internal {

absl::string_view Sv(std::string_view s) { return {s.data(), s.size()}; }

// An id or address quoted so any bytes print safely.
std::string Quote(std::string_view s) {
  return absl::StrCat("'", absl::CHexEscape(Sv(s)), "'");
}

// ---- Argument checks ----

absl::Status ValidateCluster(std::string_view cluster) {
  if (cluster.empty()) {
    return absl::InvalidArgumentError("cluster name is empty");
  }
  if (cluster.size() > kMaxClusterNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster name is ", cluster.size(), " bytes, more than ",
                     kMaxClusterNameBytes));
  }
  return absl::OkStatus();
}

// What ValidateRingConfig says of a one-member ring {id, address}: the
// member rules of hashring/ring_config.h.
absl::Status CheckAsMember(std::string_view id, std::string_view address) {
  hashring::RingConfig one;
  one.members.push_back({std::string(id), std::string(address), 1});
  one.virtual_points_per_weight = 1;
  one.replication = 1;
  return hashring::ValidateRingConfig(one);
}

absl::Status ValidateId(std::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("node id is empty");
  if (id.size() > hashring::kMaxMemberIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("node id is ", id.size(), " bytes, more than ",
                     hashring::kMaxMemberIdBytes));
  }
  if (!CheckAsMember(id, "").ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("node id ", Quote(id), " is not valid UTF-8"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAddress(std::string_view address) {
  if (address.size() > kMaxNodeAddressBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("node address is ", address.size(), " bytes, more than ",
                     kMaxNodeAddressBytes));
  }
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(std::string(address), &host, &port).ok() || port == 0 ||
      !CheckAsMember("x", address).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node address ", Quote(address), " is not host:port (port 1..65535)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateEpoch(uint64_t epoch) {
  if (epoch == 0 || epoch > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epoch ", epoch, " is out of range"));
  }
  return absl::OkStatus();
}

absl::Status ValidateCounters(const MoveCounters& c) {
  for (uint64_t v : {c.keys, c.bytes, c.documents}) {
    if (v > kMaxCounterIncrement) {
      return absl::InvalidArgumentError(
          absl::StrCat("a move counter increment of ", v, " is more than ",
                       kMaxCounterIncrement));
    }
  }
  return absl::OkStatus();
}

// ---- Reading what Redis holds ----

FlatHash ToMap(const RedisReply& flat) {
  FlatHash out;
  for (size_t i = 0; i + 1 < flat.elements.size(); i += 2) {
    out[flat.elements[i].str] = flat.elements[i + 1].str;
  }
  return out;
}

absl::Status Corrupt(absl::string_view key, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(key, ": ", what));
}

template <typename Int>
absl::Status FieldInt(const FlatHash& h, const std::string& key,
                      const char* field, Int* out) {
  auto it = h.find(field);
  if (it == h.end()) {
    return Corrupt(key,
                   absl::StrCat("the move record has no field '", field, "'"));
  }
  if (!absl::SimpleAtoi(it->second, out)) {
    return Corrupt(key, absl::StrCat("field '", field, "' is ",
                                     Quote(it->second), ", not a number"));
  }
  return absl::OkStatus();
}

// Looks `field` up among `names` (the enum's values in order).
template <typename Enum, size_t N>
absl::Status FieldEnum(const FlatHash& h, const std::string& key,
                       const char* field, const char* const (&names)[N],
                       Enum* out) {
  auto it = h.find(field);
  const std::string value = it == h.end() ? "" : it->second;
  for (size_t i = 0; i < N; ++i) {
    if (value == names[i]) {
      *out = static_cast<Enum>(i);
      return absl::OkStatus();
    }
  }
  return Corrupt(key, absl::StrCat("field '", field, "' is ", Quote(value)));
}

constexpr const char* kStateNames[] = {"pending", "active", "leaving", "down"};
constexpr const char* kModeNames[] = {"handoff", "drop", "lost"};
constexpr const char* kKindNames[] = {"add", "remove", "failover"};
constexpr const char* kPhaseNames[] = {"drain", "keys"};
constexpr const char* kStatusNames[] = {"running", "done", "failed",
                                        "rolled_back"};

// The move record, nullopt for an empty (absent) hash.
absl::StatusOr<std::optional<MoveRecord>> ParseMove(const RedisReply& flat,
                                                    const std::string& key) {
  const FlatHash h = ToMap(flat);
  if (h.empty()) return std::nullopt;
  MoveRecord m;
  LATENTD_RETURN_IF_ERROR(FieldEnum(h, key, "kind", kKindNames, &m.kind));
  if (m.kind == MoveKind::kRemove) {
    LATENTD_RETURN_IF_ERROR(FieldEnum(h, key, "mode", kModeNames, &m.mode));
  }
  LATENTD_RETURN_IF_ERROR(FieldEnum(h, key, "phase", kPhaseNames, &m.phase));
  LATENTD_RETURN_IF_ERROR(FieldEnum(h, key, "status", kStatusNames, &m.status));
  LATENTD_RETURN_IF_ERROR(FieldInt(h, key, "from_epoch", &m.from_epoch));
  LATENTD_RETURN_IF_ERROR(FieldInt(h, key, "to_epoch", &m.to_epoch));
  LATENTD_RETURN_IF_ERROR(FieldInt(h, key, "started_ms", &m.started_ms));
  LATENTD_RETURN_IF_ERROR(FieldInt(h, key, "updated_ms", &m.updated_ms));
  LATENTD_RETURN_IF_ERROR(FieldInt(h, key, "finished_ms", &m.finished_ms));
  LATENTD_RETURN_IF_ERROR(FieldInt(h, key, "keys", &m.counters.keys));
  LATENTD_RETURN_IF_ERROR(FieldInt(h, key, "bytes", &m.counters.bytes));
  LATENTD_RETURN_IF_ERROR(FieldInt(h, key, "documents", &m.counters.documents));
  auto node = h.find("node");
  if (node == h.end() || !ValidateId(node->second).ok()) {
    return Corrupt(key, "the move record has no valid 'node'");
  }
  m.node = node->second;
  if (auto e = h.find("error"); e != h.end()) m.error = e->second;
  if (m.to_epoch <= m.from_epoch) {
    return Corrupt(
        key, absl::StrCat("to_epoch ", m.to_epoch, " is not after from_epoch ",
                          m.from_epoch));
  }
  return m;
}

absl::StatusOr<Heartbeat> ParseHeartbeat(const std::string& key,
                                         const std::string& id,
                                         const std::string& value) {
  std::vector<std::string> parts = absl::StrSplit(value, ' ');
  Heartbeat hb;
  // Tagged fields come last: s=, f= and r= are read, a newer node's
  // others skipped.
  while (parts.size() > 4 && absl::StrContains(parts.back(), '=')) {
    if (absl::StartsWith(parts.back(), "s=") &&
        (!absl::SimpleHexAtoi(parts.back().substr(2), &hb.settled_checksum) ||
         hb.settled_checksum == 0)) {
      return Corrupt(
          key, absl::StrCat("field ", Quote(id), " has ", Quote(parts.back()),
                            ", not s=HEX (a non-zero checksum)"));
    }
    if (absl::StartsWith(parts.back(), "f=")) {
      if (parts.back() != "f=1") {
        return Corrupt(key, absl::StrCat("field ", Quote(id), " has ",
                                         Quote(parts.back()), ", not f=1"));
      }
      hb.stopped_failed = true;
    }
    if (absl::StartsWith(parts.back(), "r=") &&
        (!absl::SimpleAtoi(parts.back().substr(2), &hb.key_copies) ||
         hb.key_copies == 0)) {
      return Corrupt(
          key, absl::StrCat("field ", Quote(id), " has ", Quote(parts.back()),
                            ", not r=N (N >= 1)"));
    }
    parts.pop_back();
  }
  // Positional fields a newer node appended after the known ones.
  if (parts.size() > 15) parts.resize(15);
  const bool has_ll = parts.size() == 15;
  hb.has_replication = parts.size() == 11 || has_ll;
  hb.has_counters = parts.size() == 8 || hb.has_replication;
  LogLikelihoodPart ll;
  if ((parts.size() != 4 && !hb.has_counters) ||
      !absl::SimpleAtoi(parts[0], &hb.unix_ms) ||
      !absl::SimpleAtoi(parts[1], &hb.sweep) ||
      !absl::SimpleAtoi(parts[2], &hb.keys) ||
      !absl::SimpleAtoi(parts[3], &hb.documents) ||
      (hb.has_counters && (!absl::SimpleAtoi(parts[4], &hb.epoch) ||
                           !absl::SimpleAtoi(parts[5], &hb.senders_retracted) ||
                           !absl::SimpleAtoi(parts[6], &hb.reseed_refused) ||
                           !absl::SimpleAtoi(parts[7], &hb.stale_refused))) ||
      (hb.has_replication &&
       (!absl::SimpleAtoi(parts[8], &hb.under_replicated) ||
        !absl::SimpleAtoi(parts[9], &hb.failovers) ||
        !absl::SimpleAtoi(parts[10], &hb.last_failover_ms))) ||
      (has_ll && (!absl::SimpleAtoi(parts[11], &ll.sweep) ||
                  !absl::SimpleAtoi(parts[12], &ll.tokens) ||
                  !absl::SimpleAtod(parts[13], &ll.doc) ||
                  !absl::SimpleAtod(parts[14], &ll.owned_word)))) {
    return Corrupt(key, absl::StrCat("field ", Quote(id), " is ", Quote(value),
                                     ", not 'unix_ms sweep keys documents "
                                     "[epoch retracted reseeds stale "
                                     "[under-replicated failovers "
                                     "last-failover-ms [ll-sweep "
                                     "ll-tokens doc-ll owned-word-ll ...]]] "
                                     "[s=HEX] [f=1] [r=N] [NAME=VALUE...]'"));
  }
  if (has_ll) hb.log_likelihood = ll;
  return hb;
}

std::vector<std::string> KeyArgs(const ClusterKeys& k) {
  return {k.ring,   k.states,  k.pending,   k.move,
          k.epochs, k.members, k.heartbeats};
}

// Runs `script` (after the prelude) over the cluster's keys (and `extra`
// after them). A connection failure stays kUnavailable; a Redis error reply
// (the scripts raise none themselves: READONLY, OOM, a script error) is
// kInternal with Redis's words, since retrying does not help.
absl::StatusOr<RedisReply> Eval(RedisClient* redis, const ClusterKeys& keys,
                                const char* script,
                                const std::vector<std::string>& args,
                                const std::string& extra) {
  std::vector<std::string> cmd = {"EVAL", absl::StrCat(kPrelude, script)};
  std::vector<std::string> k = KeyArgs(keys);
  if (!extra.empty()) k.push_back(extra);
  cmd.push_back(std::to_string(k.size()));
  cmd.insert(cmd.end(), k.begin(), k.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  absl::StatusOr<RedisReply> r = redis->Command(cmd);
  if (!r.ok()) {
    if (absl::IsUnavailable(r.status())) return r.status();
    return absl::InternalError(absl::StrCat(
        "Redis refused a cluster admin script: ", r.status().message()));
  }
  if (r->type != RedisReply::Type::kArray || r->elements.empty()) {
    return absl::InternalError("a cluster admin script replied unexpectedly");
  }
  return r;
}

// The status for a script's non-'ok' reply.
absl::Status Refused(const RedisReply& r, const ClusterKeys& keys,
                     std::string_view id) {
  const std::string& tag = r.elements[0].str;
  auto arg = [&r](size_t i) -> const RedisReply& {
    static const RedisReply kNil;
    return i < r.elements.size() ? r.elements[i] : kNil;
  };
  if (tag == "changed") {
    if (arg(1).str.empty()) {
      return absl::AbortedError(
          "the ring was deleted concurrently; nothing was changed");
    }
    auto ring = hashring::ParseRingConfig(arg(1).str);
    if (!ring.ok()) return Corrupt(keys.ring, ring.status().message());
    return absl::AbortedError(
        absl::StrCat("the ring changed concurrently: epoch ", ring->version,
                     "; nothing was changed"));
  }
  if (tag == "move" || tag == "no_move") {
    auto move = ParseMove(arg(1), keys.move);
    if (!move.ok()) return move.status();
    int64_t now_ms = 0;
    if (!absl::SimpleAtoi(arg(2).str, &now_ms) && *move) {
      now_ms = (*move)->updated_ms;
    }
    const std::string desc = *move ? DescribeMove(**move, now_ms) : "none";
    return absl::FailedPreconditionError(
        tag == "move"
            ? absl::StrCat("a move is already running: ", desc)
            : absl::StrCat("no such move is running (latest: ", desc, ")"));
  }
  if (tag == "alive") {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", Quote(id), " is alive: its heartbeat is recent (",
                     arg(1).str.empty() ? "none yet" : Quote(arg(1).str),
                     "); nothing was changed"));
  }
  if (tag == "not_state") {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", Quote(id), " is ", arg(1).str,
                     ", not what this change needs; nothing was changed"));
  }
  if (tag == "registration_changed") {
    return absl::AbortedError(absl::StrCat(
        "node ", Quote(id),
        " re-registered or was admitted concurrently; nothing was changed"));
  }
  if (tag == "wrongtype") {
    return Corrupt(arg(1).str, absl::StrCat("holds a Redis ", arg(2).str,
                                            ", not a ", arg(3).str));
  }
  if (tag == "corrupt") {
    return Corrupt(arg(1).str,
                   absl::StrCat("field '", arg(2).str, "' is not a counter"));
  }
  if (tag == "overflow") {
    return absl::OutOfRangeError(
        absl::StrCat("the move's ", arg(1).str, " counter would pass 9e18"));
  }
  return absl::InternalError(
      absl::StrCat("a cluster admin script replied ", Quote(tag)));
}

absl::StatusOr<Snapshot> ReadSnapshot(RedisClient* redis,
                                      const ClusterKeys& keys) {
  LATENTD_ASSIGN_OR_RETURN(RedisReply r, Eval(redis, keys, kReadScript, {}));
  if (r.elements[0].str != "ok") return Refused(r, keys, "");
  if (r.elements.size() != 9) {
    return absl::InternalError("the cluster read script replied unexpectedly");
  }
  Snapshot s;
  if (!absl::SimpleAtoi(r.elements[1].str, &s.now_ms)) {
    return absl::InternalError("Redis TIME did not parse");
  }
  if (r.elements[2].integer != 0) {
    s.ring_bytes = r.elements[3].str;
    auto ring = hashring::ParseRingConfig(s.ring_bytes);
    if (!ring.ok()) return Corrupt(keys.ring, ring.status().message());
    s.ring = *std::move(ring);
  }
  for (const auto& [id, value] : ToMap(r.elements[4])) {
    if (value == "active") {
      s.states[id] = MemberState::kActive;
    } else if (value == "leaving") {
      s.states[id] = MemberState::kLeaving;
    } else if (value == "down") {
      s.states[id] = MemberState::kDown;
    } else {
      return Corrupt(keys.states,
                     absl::StrCat("field ", Quote(id), " is ", Quote(value)));
    }
  }
  s.pending = ToMap(r.elements[5]);
  for (const auto& [id, address] : s.pending) {
    if (!CheckAsMember(id, address).ok()) {
      return Corrupt(keys.pending,
                     absl::StrCat("field ", Quote(id),
                                  " is not a node id with a UTF-8 address"));
    }
  }
  LATENTD_ASSIGN_OR_RETURN(s.move, ParseMove(r.elements[6], keys.move));
  for (const auto& [id, value] : ToMap(r.elements[7])) {
    LATENTD_ASSIGN_OR_RETURN(s.heartbeats[id],
                             ParseHeartbeat(keys.heartbeats, id, value));
  }
  s.members = ToMap(r.elements[8]);
  return s;
}

absl::Status RequireRing(const Snapshot& s, std::string_view cluster) {
  if (s.ring) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "cluster ", Quote(cluster), " has no ring yet (no epoch written)"));
}

absl::Status RequireNoMove(const Snapshot& s) {
  if (!s.MoveRunning()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "a move is already running: ", DescribeMove(*s.move, s.now_ms)));
}

}  // namespace internal

using internal::Corrupt;
using internal::Eval;
using internal::kAdmitScript;
using internal::kFinishScript;
using internal::kHeartbeatScript;
using internal::kKindNames;
using internal::kLeaveScript;
using internal::kModeNames;
using internal::kPhaseNames;
using internal::kProgressScript;
using internal::kRegisterScript;
using internal::kStateNames;
using internal::kStatusNames;
using internal::ParseMove;
using internal::Quote;
using internal::ReadSnapshot;
using internal::Refused;
using internal::RequireNoMove;
using internal::RequireRing;
using internal::Snapshot;
using internal::Sv;
using internal::ValidateAddress;
using internal::ValidateCluster;
using internal::ValidateCounters;
using internal::ValidateEpoch;
using internal::ValidateId;

ClusterKeys::ClusterKeys(std::string_view cluster)
    : members(MembersKey(cluster)), ring(RingKey(cluster)) {
  prefix_ = absl::StrCat("latentd:", Sv(cluster), ":");
  pending = prefix_ + "pending";
  states = prefix_ + "states";
  move = prefix_ + "move";
  epochs = prefix_ + "epochs";
  heartbeats = prefix_ + "heartbeats";
  drain = prefix_ + "drain";
  handoffs = prefix_ + "handoffs";
}

std::string ClusterKeys::Alive(std::string_view id) const {
  return absl::StrCat(prefix_, "alive:", Sv(id));
}

const char* MemberStateName(MemberState s) {
  return kStateNames[static_cast<int>(s)];
}
const char* RemoveModeName(RemoveMode m) {
  return kModeNames[static_cast<int>(m)];
}
const char* MoveKindName(MoveKind k) { return kKindNames[static_cast<int>(k)]; }
const char* MovePhaseName(MovePhase p) {
  return kPhaseNames[static_cast<int>(p)];
}
const char* MoveStatusName(MoveStatus s) {
  return kStatusNames[static_cast<int>(s)];
}

std::string DescribeMove(const MoveRecord& m, int64_t now_ms) {
  std::string what = absl::StrCat(MoveKindName(m.kind), " ", m.node);
  if (m.kind == MoveKind::kRemove) {
    absl::StrAppend(&what, " (", RemoveModeName(m.mode), ")");
  }
  const int64_t end = m.status == MoveStatus::kRunning ? now_ms : m.finished_ms;
  absl::StrAppend(
      &what, ", epoch ", m.from_epoch, " -> ", m.to_epoch, ", phase ",
      MovePhaseName(m.phase), ", ", MoveStatusName(m.status),
      absl::StrFormat(" %.1f s",
                      std::max<int64_t>(0, end - m.started_ms) / 1000.0),
      "; ", m.counters.keys, " keys, ", m.counters.bytes, " bytes, ",
      m.counters.documents, " documents moved");
  if (!m.error.empty()) absl::StrAppend(&what, "; error: ", m.error);
  return what;
}

absl::Status RegisterPending(RedisClient* redis, std::string_view cluster,
                             std::string_view id, std::string_view address,
                             const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  LATENTD_RETURN_IF_ERROR(ValidateAddress(address));
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
  const std::string sid(id);
  if (s.InRing(sid) != nullptr || s.states.count(sid) != 0) {
    return absl::AlreadyExistsError(absl::StrCat(
        "node ", Quote(id), " is already ", MemberStateName(s.StateOf(sid)),
        " in cluster ", Quote(cluster), " (epoch ",
        s.ring ? s.ring->version : 0, ")"));
  }
  if (options.before_commit) options.before_commit();
  LATENTD_ASSIGN_OR_RETURN(RedisReply r,
                           Eval(redis, keys, kRegisterScript,
                                {s.ring_bytes, sid, std::string(address)}));
  return r.elements[0].str == "ok" ? absl::OkStatus() : Refused(r, keys, id);
}

absl::StatusOr<hashring::RingConfig> AdmitNode(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
  LATENTD_RETURN_IF_ERROR(RequireRing(s, cluster));
  const std::string sid(id);
  if (s.InRing(sid) != nullptr || s.states.count(sid) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", Quote(id), " is not pending: it is ",
        MemberStateName(s.StateOf(sid)), " in epoch ", s.ring->version));
  }
  auto pending = s.pending.find(sid);
  if (pending == s.pending.end()) {
    return absl::NotFoundError(absl::StrCat("node ", Quote(id),
                                            " is not registered with cluster ",
                                            Quote(cluster)));
  }
  return internal::AddMember(redis, keys, s, sid, pending->second, kAdmitScript,
                             "admitting", options);
}

absl::StatusOr<hashring::RingConfig> RemoveNode(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    RemoveMode mode, const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  if (mode != RemoveMode::kHandoff && mode != RemoveMode::kDrop &&
      mode != RemoveMode::kLost) {
    return absl::InvalidArgumentError("unknown remove mode");
  }
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
  LATENTD_RETURN_IF_ERROR(RequireRing(s, cluster));
  const std::string sid(id);
  if (s.InRing(sid) == nullptr && s.StateOf(sid) == MemberState::kDown &&
      s.states.count(sid) != 0) {
    if (mode != RemoveMode::kLost) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node ", Quote(id),
          " is down (failed over): it comes back by itself when restarted "
          "from its data directory; --lost removes it for good"));
    }
    return internal::ForgetDown(redis, keys, s, sid, options);
  }
  if (s.InRing(sid) == nullptr) {
    if (s.pending.count(sid) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("node ", Quote(id),
                       " is pending, not in the ring: nothing to remove"));
    }
    if (s.states.count(sid) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("node ", Quote(id), " has left the ring already (epoch ",
                       s.ring->version, "); its key hand-off did not finish"));
    }
    return absl::NotFoundError(
        absl::StrCat("node ", Quote(id), " is not a member of cluster ",
                     Quote(cluster), " (epoch ", s.ring->version, ")"));
  }
  LATENTD_RETURN_IF_ERROR(RequireNoMove(s));
  size_t others_active = 0;
  for (const auto& m : s.ring->members) {
    others_active += m.id != sid && s.StateOf(m.id) == MemberState::kActive;
  }
  if (others_active == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", Quote(id), " is the last active member of cluster ",
        Quote(cluster), "; nothing was changed"));
  }
  hashring::RingConfig next = *s.ring;
  next.version = s.ring->version + 1;
  if (options.before_commit) options.before_commit();
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r,
      Eval(redis, keys, kLeaveScript,
           {s.ring_bytes, hashring::SerializeRingConfig(next),
            std::to_string(s.ring->version), std::to_string(next.version), sid,
            std::string(RemoveModeName(mode))}));
  if (r.elements[0].str != "ok") return Refused(r, keys, id);
  return next;
}

absl::Status ReportMoveProgress(RedisClient* redis, std::string_view cluster,
                                uint64_t to_epoch,
                                const MoveCounters& counters) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateEpoch(to_epoch));
  LATENTD_RETURN_IF_ERROR(ValidateCounters(counters));
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r,
      Eval(redis, keys, kProgressScript,
           {std::to_string(to_epoch), std::to_string(counters.keys),
            std::to_string(counters.bytes),
            std::to_string(counters.documents)}));
  return r.elements[0].str == "ok" ? absl::OkStatus() : Refused(r, keys, "");
}

absl::StatusOr<MoveRecord> FinishMove(RedisClient* redis,
                                      std::string_view cluster,
                                      uint64_t to_epoch,
                                      const MoveCounters& counters,
                                      const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateEpoch(to_epoch));
  LATENTD_RETURN_IF_ERROR(ValidateCounters(counters));
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
  if (!s.MoveRunning() || s.move->to_epoch != to_epoch || !s.ring) {
    return absl::FailedPreconditionError(
        absl::StrCat("no move to epoch ", to_epoch, " is running (latest: ",
                     s.move ? DescribeMove(*s.move, s.now_ms) : "none", ")"));
  }
  const MoveRecord& m = *s.move;
  std::string action = "done", address;
  hashring::RingConfig next;
  if (m.kind == MoveKind::kRemove && m.phase == MovePhase::kDrain) {
    action = "advance";
    if (const hashring::Member* leaving = s.InRing(m.node)) {
      address = leaving->address;
    }
    next = *s.ring;
    std::erase_if(next.members,
                  [&m](const hashring::Member& x) { return x.id == m.node; });
    next.version = s.ring->version + 1;
    next.replication = std::min<uint32_t>(
        next.replication, static_cast<uint32_t>(next.members.size()));
    if (absl::Status v = hashring::ValidateRingConfig(next); !v.ok()) {
      return Corrupt(keys.ring, absl::StrCat("removing ", Quote(m.node),
                                             " leaves ", v.message()));
    }
  } else if (m.kind == MoveKind::kRemove) {
    action = "done_remove";
  }
  if (options.before_commit) options.before_commit();
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r,
      Eval(redis, keys, kFinishScript,
           {s.ring_bytes, std::to_string(to_epoch),
            std::string(MovePhaseName(m.phase)), m.node, action,
            action == "advance" ? hashring::SerializeRingConfig(next) : "",
            std::to_string(next.version), std::to_string(counters.keys),
            std::to_string(counters.bytes), std::to_string(counters.documents),
            address}));
  if (r.elements[0].str != "ok") return Refused(r, keys, m.node);
  if (r.elements.size() != 2) {
    return absl::InternalError("the finish script replied unexpectedly");
  }
  LATENTD_ASSIGN_OR_RETURN(std::optional<MoveRecord> after,
                           ParseMove(r.elements[1], keys.move));
  if (!after) return Corrupt(keys.move, "the move record vanished");
  return *after;
}

absl::StatusOr<MoveRecord> WaitForMove(RedisClient* redis,
                                       std::string_view cluster, uint64_t epoch,
                                       absl::Duration timeout,
                                       const ClusterAdminOptions& options) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateEpoch(epoch));
  const ClusterKeys keys(cluster);
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
    if (!s.move || s.move->to_epoch < epoch) {
      return absl::NotFoundError(absl::StrCat("no move wrote epoch ", epoch));
    }
    const MoveRecord& m = *s.move;
    if (m.from_epoch >= epoch) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the move that wrote epoch ", epoch,
          " has ended and a later one replaced its record; see ", keys.epochs));
    }
    if (m.status == MoveStatus::kDone) return m;
    if (m.status == MoveStatus::kFailed ||
        m.status == MoveStatus::kRolledBack) {
      return absl::AbortedError(absl::StrCat(m.status == MoveStatus::kFailed
                                                 ? "the move failed: "
                                                 : "the move was rolled back: ",
                                             DescribeMove(m, s.now_ms)));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("still running after ", absl::FormatDuration(timeout),
                       ": ", DescribeMove(m, s.now_ms)));
    }
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(
        std::min(options.poll_interval, deadline - absl::Now())));
  }
}

absl::StatusOr<ClusterStatus> ReadClusterStatus(RedisClient* redis,
                                                std::string_view cluster) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  const ClusterKeys keys(cluster);
  LATENTD_ASSIGN_OR_RETURN(Snapshot s, ReadSnapshot(redis, keys));
  ClusterStatus out;
  out.cluster = std::string(cluster);
  out.now_ms = s.now_ms;
  out.move = s.move;
  auto heartbeat = [&s](const std::string& id) -> std::optional<Heartbeat> {
    auto it = s.heartbeats.find(id);
    if (it == s.heartbeats.end()) return std::nullopt;
    return it->second;
  };
  if (s.ring) {
    out.epoch = s.ring->version;
    for (const auto& m : s.ring->members) {
      out.members.push_back(
          {m.id, m.address, s.StateOf(m.id), true, m.weight, heartbeat(m.id)});
    }
  }
  for (const auto& [id, state] : s.states) {
    if ((state != MemberState::kLeaving && state != MemberState::kDown) ||
        s.InRing(id) != nullptr) {
      continue;
    }
    auto addr = s.members.find(id);
    out.members.push_back({id, addr == s.members.end() ? "" : addr->second,
                           state, false, 0, heartbeat(id)});
  }
  for (const auto& [id, address] : s.pending) {
    out.members.push_back(
        {id, address, MemberState::kPending, false, 0, heartbeat(id)});
  }
  std::sort(
      out.members.begin(), out.members.end(),
      [](const MemberStatus& a, const MemberStatus& b) { return a.id < b.id; });
  out.ring = std::move(s.ring);
  LATENTD_ASSIGN_OR_RETURN(out.drain_requested, DrainRequested(redis, cluster));
  return out;
}

absl::Status WriteHeartbeat(RedisClient* redis, std::string_view cluster,
                            std::string_view id, const Heartbeat& heartbeat,
                            absl::Duration alive_for) {
  LATENTD_RETURN_IF_ERROR(ValidateCluster(cluster));
  LATENTD_RETURN_IF_ERROR(ValidateId(id));
  const ClusterKeys keys(cluster);
  std::vector<std::string> args = {std::string(id),
                                   std::to_string(heartbeat.sweep),
                                   std::to_string(heartbeat.keys),
                                   std::to_string(heartbeat.documents),
                                   std::to_string(heartbeat.epoch),
                                   std::to_string(heartbeat.senders_retracted),
                                   std::to_string(heartbeat.reseed_refused),
                                   std::to_string(heartbeat.stale_refused),
                                   std::to_string(heartbeat.under_replicated),
                                   std::to_string(heartbeat.failovers),
                                   std::to_string(heartbeat.last_failover_ms)};
  if (const std::optional<LogLikelihoodPart>& ll = heartbeat.log_likelihood) {
    for (std::string v : {std::to_string(ll->sweep), std::to_string(ll->tokens),
                          absl::StrFormat("%.17g", ll->doc),
                          absl::StrFormat("%.17g", ll->owned_word)}) {
      args.push_back(std::move(v));
    }
  }
  if (heartbeat.settled_checksum != 0) {
    args.push_back(absl::StrCat("s=", absl::Hex(heartbeat.settled_checksum)));
  }
  if (heartbeat.stopped_failed) args.push_back("f=1");
  if (heartbeat.key_copies != 0) {
    args.push_back(absl::StrCat("r=", heartbeat.key_copies));
  }
  args.push_back(std::to_string(
      std::max<int64_t>(0, absl::ToInt64Milliseconds(alive_for))));
  LATENTD_ASSIGN_OR_RETURN(
      RedisReply r, Eval(redis, keys, kHeartbeatScript, args, keys.Alive(id)));
  return r.elements[0].str == "ok" ? absl::OkStatus() : Refused(r, keys, id);
}

}  // namespace latentd::sync
