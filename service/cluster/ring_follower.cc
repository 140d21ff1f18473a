#include "service/cluster/ring_follower.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "hashring/ring_config.h"
#include "service/cluster/internal/ring_change_reading.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

void RingFollower::SetInitialRing(hashring::RingConfig config,
                                  std::shared_ptr<const hashring::Ring> ring) {
  parts_.owner->SetAdmission(config.version, AdmissionFor(config, ring));
  parts_.owner->SetEpoch(config.version);
  absl::MutexLock l(&ring_mu_);
  ring_config_ = std::move(config);
  ring_ = std::move(ring);
}

absl::flat_hash_set<std::string> RingFollower::not_backups() const {
  absl::MutexLock l(&ring_mu_);
  return not_backups_;
}

void RingFollower::TakeRing(const RingChange& c) {
  absl::MutexLock l(&ring_mu_);
  ring_config_ = c.next;
  ring_ = c.ring;
  if (c.not_backups.has_value()) {
    not_backups_ = *c.not_backups;
    not_backups_epoch_ = c.next.version;
  }
}

absl::Status RingFollower::RefreshNotBackups(sync::RedisClient* redis) {
  uint64_t epoch = 0;
  {
    absl::MutexLock l(&ring_mu_);
    if (not_backups_epoch_ == ring_config_.version) return absl::OkStatus();
    epoch = ring_config_.version;
  }
  LATENTD_ASSIGN_OR_RETURN(sync::ClusterStatus st,
                           sync::ReadClusterStatus(redis, options_.cluster));
  // (States read past `epoch` only exclude a member a little earlier: each
  // state change comes with a new epoch.)
  absl::MutexLock l(&ring_mu_);
  if (ring_config_.version != epoch) return absl::OkStatus();
  not_backups_ = internal::NotBackupsOf(st);
  not_backups_epoch_ = epoch;
  return absl::OkStatus();
}

void RingFollower::Start(sync::Synchronizer* sync, sync::AbelianTable* table) {
  sync_ = sync;
  table_ = table;
  if (options_.ring_poll > absl::ZeroDuration()) {
    watcher_ = std::thread([this] { Watch(); });
  }
}

void RingFollower::Stop() {
  if (stop_.Stop()) return;
  if (watcher_.joinable()) watcher_.join();
  if (!outgoing_.empty()) {
    options_.log(absl::StrCat(
        "stopping with ", outgoing_.size(),
        " key hand-off(s) not taken by their new owners: those keys' "
        "globals are lost to the cluster"));
  }
}

hashring::RingConfig RingFollower::ring_config() const {
  absl::MutexLock l(&ring_mu_);
  return ring_config_;
}

std::shared_ptr<const hashring::Ring> RingFollower::ring() const {
  absl::MutexLock l(&ring_mu_);
  return ring_;
}

uint64_t RingFollower::epoch() const {
  absl::MutexLock l(&ring_mu_);
  return ring_config_.version;
}

absl::Status RingFollower::WithRoute(
    const std::function<absl::Status(const hashring::Ring&)>& add) {
  absl::MutexLock route(&route_mu_);
  const std::shared_ptr<const hashring::Ring> r = ring();
  return add(*r);
}

absl::StatusOr<std::vector<std::unique_ptr<sync::OwnerChannel>>>
RingFollower::ChannelsFor(const hashring::RingConfig& config) {
  std::vector<std::unique_ptr<sync::OwnerChannel>> channels;
  for (const hashring::Member& m : config.members) {
    parts_.clocks->Add(m.id);
    if (m.id == parts_.node_id) {
      // (With copies, the own batches are answered once the backups hold
      // them.)
      channels.push_back(parts_.key_replicas->OwnChannel());
      continue;
    }
    LATENTD_ASSIGN_OR_RETURN(sync::Client * client, parts_.peers->ClientFor(m));
    channels.push_back(sync::MakeRemoteChannel(client, options_.call_timeout));
  }
  return channels;
}

sync::OwnerAdmission RingFollower::AdmissionFor(
    const hashring::RingConfig& config,
    std::shared_ptr<const hashring::Ring> ring,
    const hashring::RingConfig* also) const {
  sync::OwnerAdmission a;
  uint32_t self = static_cast<uint32_t>(config.members.size());
  for (uint32_t i = 0; i < config.members.size(); ++i) {
    a.members.insert(config.members[i].id);
    if (config.members[i].id == parts_.node_id) self = i;
  }
  if (also != nullptr) {
    for (const hashring::Member& m : also->members) a.members.insert(m.id);
  }
  // (A node the ring does not list owns nothing.)
  a.owns = [ring = std::move(ring), self](sync::Key k) {
    return ring->Owner(k) == self;
  };
  a.max_incarnation = [] {
    return sync::IncarnationBound(absl::Now(), sync::kMaxClockSkew);
  };
  // Topic counts; a linked table (a graph's coordinates) may go negative.
  a.counts = parts_.counts;
  a.max_new_keys_per_sender = options_.max_new_keys_per_member;
  return a;
}

void RingFollower::Watch() {
  std::unique_ptr<sync::RedisClient> redis;
  const std::string key = sync::RingKey(options_.cluster);
  while (true) {
    if (!stop_.SleepUnlessStopped(options_.ring_poll)) return;
    SendHandoffs();
    if (redis == nullptr) {
      // Redis away: training goes on with the ring this node has.
      absl::StatusOr<std::unique_ptr<sync::RedisClient>> r =
          sync::RedisClient::Connect(options_.redis_url);
      if (!r.ok()) continue;
      redis = std::move(*r);
    }
    if (!parts_.frames->RefreshRegistryIfStale(redis.get()).ok()) {
      redis.reset();
      continue;
    }
    if (change_.has_value()) {
      absl::Status s = AdvanceRingChange(redis.get());
      if (s.code() == absl::StatusCode::kUnavailable) redis.reset();
      continue;
    }
    if (RefreshNotBackups(redis.get()).code() ==
        absl::StatusCode::kUnavailable) {
      redis.reset();
      continue;
    }
    absl::StatusOr<sync::RedisReply> reply = redis->Command({"GET", key});
    if (!reply.ok()) {
      redis.reset();
      continue;
    }
    if (reply->type != sync::RedisReply::Type::kString) {
      // Redis came back empty (restarted without persistence): the members
      // write back the ring they train with, so that operators can change
      // membership again. The first write wins; an older epoch written
      // back is never followed by a node at a newer one.
      if (absl::Status s = RegisterRingAgain(redis.get()); !s.ok()) {
        redis.reset();
      }
      continue;
    }
    absl::StatusOr<hashring::RingConfig> next =
        hashring::ParseRingConfig(reply->str);
    if (!next.ok() || next->version <= epoch() ||
        next->version == refused_epoch_) {
      continue;
    }
    absl::Status begun = BeginRingChange(*next, redis.get());
    if (!begun.ok()) {
      refused_epoch_ = next->version;
      options_.log(absl::StrCat("not following ring epoch ", next->version,
                                ": ", begun.message()));
      continue;
    }
    absl::Status s = AdvanceRingChange(redis.get());
    if (s.code() == absl::StatusCode::kUnavailable) redis.reset();
  }
}

absl::Status RingFollower::RegisterRingAgain(sync::RedisClient* redis) {
  const hashring::RingConfig config = ring_config();
  if (config.version == 0) return absl::OkStatus();
  LATENTD_ASSIGN_OR_RETURN(
      sync::RedisReply set,
      redis->Command({"SET", sync::RingKey(options_.cluster),
                      hashring::SerializeRingConfig(config), "NX"}));
  std::vector<std::string> members = {"HSET",
                                      sync::MembersKey(options_.cluster)};
  for (const hashring::Member& m : config.members) {
    members.push_back(m.id);
    members.push_back(m.address);
  }
  LATENTD_RETURN_IF_ERROR(redis->Command(members).status());
  if (set.type == sync::RedisReply::Type::kStatus) {
    options_.log(absl::StrCat("Redis had lost cluster ", options_.cluster,
                              "'s ring: wrote epoch ", config.version,
                              " back"));
  }
  return absl::OkStatus();
}

absl::Status RingFollower::BeginRingChange(const hashring::RingConfig& next,
                                           sync::RedisClient* redis) {
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(next));
  bool listed = false;
  for (const hashring::Member& m : next.members)
    listed |= m.id == parts_.node_id;
  absl::StatusOr<sync::ClusterStatus> st =
      sync::ReadClusterStatus(redis, options_.cluster);
  internal::RingChangeReading reading;
  if (st.ok()) {
    reading = internal::ReadRingChange(*st, next, parts_.node_id, listed);
    if (!reading.added.empty()) parts_.clocks->Revive(reading.added);
  }
  if (!listed && !leaving_.load() && reading.self_down) {
    if (!declared_down_.exchange(true)) {
      options_.log(absl::StrCat(
          "this node was declared down (its heartbeats in Redis came later "
          "than the failure timeout) and failed over at epoch ",
          next.version,
          ": it stops sampling; restart it from its data directory to "
          "return"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("this node (", parts_.node_id, ") is down in epoch ",
                     next.version, "; restart it to return"));
  }
  if (!listed && !leaving_.load()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the ring no longer lists this node (", parts_.node_id,
        "); leaving a running cluster is not supported yet, so it stays at "
        "epoch ",
        epoch()));
  }
  for (const hashring::Member& m : next.members) {
    if (m.id == parts_.node_id) continue;
    LATENTD_RETURN_IF_ERROR(parts_.peers->ClientFor(m).status());
    parts_.clocks->Add(m.id);
  }
  // (A leaving node owns nothing in `next`: every key it holds moves.)
  // From here on, batches routed by the old ring are refused, and the keys
  // that move leave this shard.
  auto new_owner = [&](sync::Key k) {
    const std::string& id = next.members[ring->Owner(k)].id;
    return id == parts_.node_id ? std::string() : id;
  };
  // Both rings' members may send until the change ends (a joiner in its
  // own hand-off, a leaving member draining).
  const hashring::RingConfig current = ring_config();
  parts_.owner->SetAdmission(next.version, AdmissionFor(next, ring, &current));
  std::vector<sync::KeyHandoff> handoffs = parts_.owner->AdvanceEpoch(
      next.version, new_owner, parts_.node_id, options_.handoff_chunk_keys);
  size_t keys = 0, bytes = 0;
  for (const sync::KeyHandoff& h : handoffs) {
    keys += h.keys_size();
    bytes += h.ByteSizeLong();
  }
  handoff_keys_out_.store(keys);
  handoff_bytes_out_.store(bytes);
  options_.info(absl::StrCat("ring epoch ", epoch(), " -> ", next.version, ": ",
                             next.members.size(), " members; handing ", keys,
                             " keys off in ", handoffs.size(), " chunk(s)"));
  for (sync::KeyHandoff& h : handoffs) outgoing_.push_back(std::move(h));
  outgoing_count_.store(outgoing_.size());
  if (parts_.key_replicas->enabled()) {
    // A failed (or lost) owner's keys that this node owns now: the part of
    // their globals that no survivor re-seeds comes from the copies here.
    // Not while the ring still lists it (a lost member's drain epoch): its
    // keys are still its own, and these copies are what the ring without
    // it takes over.
    for (const std::string& dead : reading.lost) {
      bool still_listed = false;
      for (const hashring::Member& m : next.members) {
        still_listed |= m.id == dead;
      }
      if (still_listed) continue;
      parts_.key_replicas->TakeOver(dead, next.version, [&](sync::Key k) {
        return new_owner(k).empty();
      });
    }
    // The backups of the new ring, now: an own batch awaiting a backup
    // that left (or died) is answered, so that no round, nor a GrowKeys
    // waiting for the rounds to end, holds phase 2 up. (Until phase 2 the
    // shard refuses the own batches, routed by the old ring: nothing is
    // copied meanwhile, and phase 2 refills.)
    LATENTD_RETURN_IF_ERROR(
        parts_.key_replicas->SetBackups(next, reading.lost));
  }
  change_ = RingChange{.next = next,
                       .ring = ring,
                       .since = absl::Now(),
                       .leave = reading.leave,
                       .lost = std::move(reading.lost),
                       .failover = reading.failover,
                       .detected_age_ms = reading.detected_age_ms,
                       .not_backups = std::nullopt};
  if (st.ok()) change_->not_backups = std::move(reading.not_backups);
  ring_changing_.store(true);
  SendHandoffs();
  return absl::OkStatus();
}

absl::Status RingFollower::AdvanceRingChange(sync::RedisClient* redis) {
  RingChange& c = *change_;
  if (!c.marked) {
    if (!outgoing_.empty()) return absl::OkStatus();  // still handing off
    // (Epochs this node skipped too: members may wait at one of them.)
    LATENTD_RETURN_IF_ERROR(
        parts_.phases->MarkRange(redis, "handoff", epoch(), c.next.version));
    c.marked = true;
  }
  bool listed = false;
  for (const hashring::Member& m : c.next.members)
    listed |= m.id == parts_.node_id;
  if (!listed) {
    // Leaving: its keys are all with the remaining members; nothing of
    // this node's rounds goes on.
    options_.info(absl::StrCat("ring epoch ", c.next.version,
                               ": every key of this node handed off"));
    TakeRing(c);  // followed (not to be begun again)
    change_.reset();
    ring_changing_.store(false);
    left_.store(true);
    return absl::OkStatus();
  }
  // This node marked itself above; every other old member must have too.
  LATENTD_ASSIGN_OR_RETURN(
      std::vector<std::string> waiting,
      parts_.phases->NotIn(redis, "handoff", c.next.version, ring_config(),
                           c.lost));
  if (!waiting.empty()) {
    if (!c.warned && absl::Now() - c.since > absl::Seconds(30)) {
      c.warned = true;
      options_.info(absl::StrCat("ring epoch ", c.next.version,
                                 ": still waiting for ", waiting.size(),
                                 " member(s) to hand their keys off (",
                                 waiting.front(), " ...); rounds stay paused"));
    }
    return absl::OkStatus();
  }
  // Every key is at its new owner: re-route this node's rounds.
  LATENTD_ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<sync::OwnerChannel>> channels,
      ChannelsFor(c.next));
  std::vector<std::string> lost_channels;
  for (const hashring::Member& m : ring_config().members) {
    if (std::find(c.lost.begin(), c.lost.end(), m.id) != c.lost.end()) {
      absl::StatusOr<sync::Client*> client = parts_.peers->ClientFor(m);
      if (client.ok()) lost_channels.push_back((*client)->peer());
    }
  }
  hashring::RingConfig before;
  {
    // No key is added (GrowKeys) between reading the keys and the ring
    // taking effect: a new key is routed by the ring the rounds use.
    absl::MutexLock route(&route_mu_);
    std::vector<uint32_t> key_owner(table_->num_keys());
    for (size_t i = 0; i < key_owner.size(); ++i) {
      key_owner[i] = c.ring->Owner(table_->key(i));
    }
    LATENTD_RETURN_IF_ERROR(sync_->Reroute(c.next.version, std::move(key_owner),
                                           std::move(channels), lost_channels));
    before = ring_config();
    TakeRing(c);
  }
  // The change is over: only the new ring's members send from here on.
  parts_.owner->SetAdmission(c.next.version, AdmissionFor(c.next, c.ring));
  for (const hashring::Member& m : before.members) {
    bool kept = false;
    for (const hashring::Member& n : c.next.members) kept |= n.id == m.id;
    if (kept) continue;
    parts_.clocks->MarkDead(m.id);  // no longer holds back SSP
    parts_.peers->Retire(m.id);
  }
  parts_.key_replicas->SettleDeparted(before, c.next, c.lost, c.failover);
  // The backups of the new ring get what they must hold of this node's
  // keys (those it took over or was handed included).
  parts_.key_replicas->Refill(c.next);
  options_.info(absl::StrCat("ring epoch ", c.next.version, " in effect after ",
                             absl::FormatDuration(absl::Now() - c.since)));
  if (c.failover) {
    // The failover ends here, as far as this node goes, with its first
    // round to the new owners of the failed member's keys.
    const sync::Synchronizer::PassResult pass = sync_->Flush();
    const absl::Duration took =
        absl::Milliseconds(c.detected_age_ms) + (absl::Now() - c.since);
    last_failover_us_.store(absl::ToInt64Microseconds(took));
    failovers_.fetch_add(1);
    options_.info(absl::StrCat(
        "failover of ", c.lost.front(), " (epoch ", c.next.version,
        "): first sync round with the new owners done ",
        absl::FormatDuration(took), " after its detection",
        pass.unavailable.empty()
            ? std::string()
            : absl::StrCat("; unreachable: ", pass.unavailable.front())));
  }
  // A node leaving with this epoch serves (answers resent batches) until
  // every member has re-routed: it waits for this set.
  absl::Status marked =
      parts_.phases->MarkRange(redis, "effect", before.version, c.next.version);
  if (!marked.ok()) {
    options_.log(absl::StrCat(
        "ring epoch ", c.next.version,
        ": could not record it in effect here: ", marked.ToString()));
  }
  bool lost_out = !c.lost.empty();
  for (const hashring::Member& m : c.next.members) {
    lost_out &= std::find(c.lost.begin(), c.lost.end(), m.id) == c.lost.end();
  }
  // Nobody drives a lost node's removal, nor an add whose joiner restarted
  // ("rejoined"): the last member to put the ring in effect ends the move.
  absl::StatusOr<std::vector<std::string>> rejoined =
      parts_.phases->In(redis, "rejoined", c.next.version);
  if (marked.ok() && (lost_out || (rejoined.ok() && !rejoined->empty()))) {
    absl::StatusOr<bool> ended =
        parts_.phases->EndMoveIfAllInEffect(redis, c.next);
    if (ended.ok() && *ended) {
      options_.info(absl::StrCat("ring epoch ", c.next.version, ": ",
                                 lost_out ? "removal of lost " : "add of ",
                                 lost_out ? c.lost.front() : rejoined->front(),
                                 " done"));
    }
  }
  if (c.leave.has_value()) {
    absl::MutexLock l(&leave_mu_);
    leave_mode_ = c.leave;
    options_.info(absl::StrCat("this node is being removed (",
                               sync::RemoveModeName(*c.leave),
                               "): it stops sampling and leaves"));
  }
  change_.reset();
  ring_changing_.store(false);
  return absl::OkStatus();
}

void RingFollower::SendHandoffs() {
  size_t kept = 0;
  for (size_t j = 0; j < outgoing_.size(); ++j) {
    sync::KeyHandoff& h = outgoing_[j];
    sync::Client* to = parts_.peers->Find(h.to_node());
    absl::Status sent = absl::NotFoundError("no such peer");
    if (to != nullptr) {
      absl::StatusOr<sync::Frame> r =
          to->CallSync(sync::MESSAGE_TYPE_KEY_HANDOFF, h.SerializeAsString(),
                       options_.call_timeout);
      sync::KeyHandoffReply reply;
      if (r.ok() && reply.ParseFromString(r->payload)) {
        sync_->NoteOwnerIncarnation(to->peer(), reply.owner_incarnation());
      }
      sent = r.status();
    }
    if (!sent.ok()) {
      if (kept != j) outgoing_[kept] = std::move(h);
      ++kept;
    }
  }
  outgoing_.resize(kept);
  outgoing_count_.store(kept);
}

namespace {

// The cluster's current ring, from Redis.
absl::StatusOr<hashring::RingConfig> ReadRing(sync::RedisClient* redis,
                                              const std::string& cluster) {
  LATENTD_ASSIGN_OR_RETURN(sync::RedisReply reply,
                           redis->Command({"GET", sync::RingKey(cluster)}));
  if (reply.type != sync::RedisReply::Type::kString) {
    return absl::DataLossError(
        absl::StrCat(sync::RingKey(cluster), " holds no ring"));
  }
  return hashring::ParseRingConfig(reply.str);
}

}  // namespace

std::optional<sync::RemoveMode> RingFollower::LeaveRequested() const {
  absl::MutexLock l(&leave_mu_);
  return leave_mode_;
}

void RingFollower::ResumeLeave(sync::RemoveMode mode) {
  absl::MutexLock l(&leave_mu_);
  leave_mode_ = mode;
  options_.info(absl::StrCat("this node's removal (",
                             sync::RemoveModeName(mode),
                             ") was left in its drain phase: it resumes, "
                             "stops sampling and leaves"));
}

namespace {

// A failure's reason as a move record keeps it: printable, at most 500
// bytes.
std::string MoveReason(std::string_view reason) {
  std::string why(reason.substr(0, 500));
  for (char& c : why) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return why.empty() ? "unknown error" : why;
}

}  // namespace

absl::StatusOr<std::unique_ptr<sync::RedisClient>> RingFollower::LeavingRedis()
    const {
  if (!LeaveRequested().has_value()) {
    return absl::FailedPreconditionError(
        "no removal of this node is running (latentctl cluster remove-node)");
  }
  return sync::RedisClient::Connect(options_.redis_url);
}

absl::Status RingFollower::FailLeave(std::string_view reason) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           LeavingRedis());
  LATENTD_RETURN_IF_ERROR(sync::FailMove(
      redis.get(), options_.cluster, epoch(),
      absl::StrCat(parts_.node_id, " could not leave: ", MoveReason(reason))));
  absl::MutexLock l(&leave_mu_);
  leave_mode_.reset();  // until a retried removal's drain epoch
  return absl::OkStatus();
}

absl::Status RingFollower::CommitHandoff() {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           LeavingRedis());
  return sync::CommitHandoff(redis.get(), options_.cluster, parts_.node_id,
                             epoch());
}

absl::Status RingFollower::RollBackLeave(std::string_view reason) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           LeavingRedis());
  const uint64_t drain = epoch();
  LATENTD_ASSIGN_OR_RETURN(
      hashring::RingConfig back,
      sync::RollBackHandoff(
          redis.get(), options_.cluster, parts_.node_id, drain,
          absl::StrCat(parts_.node_id,
                       " could not leave, rolled back to epoch ", drain - 1,
                       "'s ring as epoch ", drain + 1, ": ",
                       MoveReason(reason))));
  // (The same placement: no member hands a key off, so none restarting
  // or away, this one included, holds the others at this epoch.)
  if (absl::Status marked =
          parts_.phases->MarkAll(redis.get(), "handoff", back);
      !marked.ok()) {
    options_.log(absl::StrCat("marking ring epoch ", back.version,
                              "'s hand-off phase for every member failed (",
                              marked.message(),
                              "): members wait for those that restart"));
  }
  options_.info(absl::StrCat("this node's removal was rolled back: ring epoch ",
                             back.version, " has it active again"));
  absl::MutexLock l(&leave_mu_);
  leave_mode_.reset();
  return absl::OkStatus();
}

absl::Status RingFollower::Leave(const sync::MoveCounters& counters) {
  const uint64_t drain_epoch = epoch();
  if (!LeaveRequested().has_value()) {
    return absl::FailedPreconditionError(
        "no removal of this node is running (latentctl cluster remove-node)");
  }
  const absl::Time deadline = absl::Now() + options_.join_timeout;
  // Push every change of this node (with drop: the negation of its
  // documents' counts) until one pass reaches every owner: its writer is
  // idle, so nothing of its own is left after that. (Quiet passes are not
  // the test: the others go on sampling.)
  parts_.finish();
  while (!sync_->Flush().unavailable.empty()) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          "leaving: this node's changes did not reach every owner in time");
    }
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           sync::RedisClient::Connect(options_.redis_url));
  leaving_.store(true);
  // The drain phase is over: the next epoch's ring lacks this node, and
  // the watcher hands its keys off as it follows it.
  LATENTD_ASSIGN_OR_RETURN(
      sync::MoveRecord move,
      sync::FinishMove(redis.get(), options_.cluster, drain_epoch, counters));
  while (!left_.load()) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "leaving: keys not handed off by epoch ", move.to_epoch, " in time"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  // Serve until every remaining member has re-routed: until then one may
  // still resend a batch here, which must be answered (applied or not).
  LATENTD_ASSIGN_OR_RETURN(hashring::RingConfig next,
                           ReadRing(redis.get(), options_.cluster));
  LATENTD_RETURN_IF_ERROR(
      parts_.phases->Await(redis.get(), next, "effect", deadline));
  sync::MoveCounters moved;
  moved.keys = handoff_keys_out_.load();
  moved.bytes = handoff_bytes_out_.load();
  LATENTD_RETURN_IF_ERROR(
      sync::FinishMove(redis.get(), options_.cluster, move.to_epoch, moved)
          .status());
  options_.info(absl::StrCat("left cluster ", options_.cluster, " at epoch ",
                             move.to_epoch));
  return absl::OkStatus();
}

}  // namespace latentd
