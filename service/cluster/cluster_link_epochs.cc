// ClusterLink's ring epochs (cluster_link.h): following a new epoch in two
// phases, handing keys off, leaving (joining: cluster_link_join.cc).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hashring/ring_config.h"
#include "service/cluster/cluster_link.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

std::string ClusterLink::PhaseSet(const char* phase, uint64_t epoch) const {
  return absl::StrCat("latentd:", options_.cluster, ":", phase, ":", epoch);
}

absl::Status ClusterLink::MarkPhase(sync::RedisClient* redis, const char* phase,
                                    uint64_t epoch) {
  const std::string set = PhaseSet(phase, epoch);
  LATENTD_RETURN_IF_ERROR(redis->Command({"SADD", set, node_id_}).status());
  return redis->Command({"EXPIRE", set, "604800"}).status();  // a week
}

absl::StatusOr<std::vector<std::string>> ClusterLink::NotInPhase(
    sync::RedisClient* redis, const char* phase, uint64_t epoch,
    const hashring::RingConfig& members, const std::vector<std::string>& skip) {
  LATENTD_ASSIGN_OR_RETURN(
      sync::RedisReply done,
      redis->Command({"SMEMBERS", PhaseSet(phase, epoch)}));
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

absl::Status ClusterLink::AwaitPhase(sync::RedisClient* redis,
                                     const hashring::RingConfig& config,
                                     const char* phase, absl::Time deadline) {
  for (;;) {
    LATENTD_ASSIGN_OR_RETURN(std::vector<std::string> missing,
                             NotInPhase(redis, phase, config.version, config));
    if (missing.empty()) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "epoch ", config.version, ": member ", missing.front(), " is not in ",
          PhaseSet(phase, config.version), " in time"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

absl::StatusOr<std::vector<std::unique_ptr<sync::OwnerChannel>>>
ClusterLink::ChannelsFor(const hashring::RingConfig& config) {
  std::vector<std::unique_ptr<sync::OwnerChannel>> channels;
  for (const hashring::Member& m : config.members) {
    clocks_->Add(m.id);
    if (m.id == node_id_) {
      // (With copies, the own batches are answered once the backups hold
      // them.)
      channels.push_back(replicator_ ? replicator_->MakeChannel()
                                     : sync::MakeLocalChannel(owner_.get()));
      continue;
    }
    LATENTD_ASSIGN_OR_RETURN(sync::Client * client, peers_->ClientFor(m));
    channels.push_back(sync::MakeRemoteChannel(client, options_.call_timeout));
  }
  return channels;
}

uint64_t ClusterLink::PeersClock() {
  sync::Progress p;
  p.set_node_id(node_id_);
  const std::string payload = p.SerializeAsString();
  uint64_t clock = 0;
  std::vector<sync::Client*> ask;
  for (const auto& [id, client] : peers_->All()) ask.push_back(client);
  // A peer refuses progress from an id its copy of the registry lacks
  // until its ring watcher reads the registry again (at most a ring poll
  // later): a joiner registered just now asks such a peer again, a few
  // polls at most. A peer that does not answer is not asked again.
  for (int round = 0; round < 8 && !ask.empty(); ++round) {
    if (round > 0 && !SleepUnlessStopping(options_.ring_poll)) break;
    std::vector<sync::Client*> refused;
    for (sync::Client* peer : ask) {
      absl::StatusOr<sync::Frame> r = peer->CallSync(
          sync::MESSAGE_TYPE_PROGRESS, payload, options_.call_timeout);
      sync::ProgressReply reply;
      if (r.ok() && reply.ParseFromString(r->payload)) {
        clock = std::max(clock, reply.clock());
      } else if (absl::IsPermissionDenied(r.status())) {
        refused.push_back(peer);
      }
    }
    ask.swap(refused);
  }
  return clock;
}

void ClusterLink::WatchRing() {
  std::unique_ptr<sync::RedisClient> redis;
  const std::string key = sync::RingKey(options_.cluster);
  while (true) {
    {
      absl::MutexLock l(&stop_mu_);
      auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(stop_mu_) {
        return stopping_;
      };
      stop_mu_.AwaitWithTimeout(absl::Condition(&stop), options_.ring_poll);
      if (stopping_) return;
    }
    SendHandoffs();
    if (redis == nullptr) {
      // Redis away: training goes on with the ring this node has.
      absl::StatusOr<std::unique_ptr<sync::RedisClient>> r =
          sync::RedisClient::Connect(options_.redis_url);
      if (!r.ok()) continue;
      redis = std::move(*r);
    }
    if (registry_stale_.exchange(false)) {
      if (absl::Status s = RefreshRegistry(redis.get()); !s.ok()) {
        registry_stale_.store(true);
        redis.reset();
        continue;
      }
    }
    if (change_.has_value()) {
      absl::Status s = AdvanceRingChange(redis.get());
      if (s.code() == absl::StatusCode::kUnavailable) redis.reset();
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

absl::Status ClusterLink::RefreshRegistry(sync::RedisClient* redis) {
  const sync::ClusterKeys keys(options_.cluster);
  absl::flat_hash_set<std::string> ids;
  for (const std::string* hash : {&keys.members, &keys.pending}) {
    LATENTD_ASSIGN_OR_RETURN(sync::RedisReply reply,
                             redis->Command({"HKEYS", *hash}));
    for (const sync::RedisReply& e : reply.elements) {
      if (e.type == sync::RedisReply::Type::kString) ids.insert(e.str);
    }
  }
  absl::MutexLock l(&registry_mu_);
  registry_ids_ = std::move(ids);
  return absl::OkStatus();
}

bool ClusterLink::InRegistry(const std::string& id) const {
  absl::MutexLock l(&registry_mu_);
  return registry_ids_.contains(id);
}

absl::Status ClusterLink::RegisterRingAgain(sync::RedisClient* redis) {
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

absl::Status ClusterLink::BeginRingChange(const hashring::RingConfig& next,
                                          sync::RedisClient* redis) {
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(next));
  bool listed = false;
  for (const hashring::Member& m : next.members) listed |= m.id == node_id_;
  std::optional<sync::RemoveMode> leave;
  std::vector<std::string> lost;
  bool failover = false;
  int64_t detected_age_ms = 0;
  absl::StatusOr<sync::ClusterStatus> st =
      sync::ReadClusterStatus(redis, options_.cluster);
  if (st.ok() && st->move && st->move->status == sync::MoveStatus::kRunning) {
    const sync::MoveRecord& move = *st->move;
    if (move.kind == sync::MoveKind::kFailover && move.node != node_id_) {
      // Failed over: followed as a lost member's removal.
      lost.push_back(move.node);
      failover = true;
      detected_age_ms = std::max<int64_t>(0, st->now_ms - move.started_ms);
    } else if (move.kind == sync::MoveKind::kAdd) {
      clocks_->Revive(move.node);  // (a failed-over member returning)
    } else if (move.kind != sync::MoveKind::kRemove) {
      // (this node's own failover: see below)
    } else if (move.mode == sync::RemoveMode::kLost && move.node != node_id_) {
      lost.push_back(move.node);
    } else if (listed && move.node == node_id_ &&
               move.phase == sync::MovePhase::kDrain &&
               move.to_epoch == next.version) {
      leave = move.mode;  // the drain epoch of this node's removal
    }
  }
  if (st.ok() && st->move && st->move->status != sync::MoveStatus::kRunning &&
      st->move->kind == sync::MoveKind::kRemove &&
      st->move->mode == sync::RemoveMode::kLost && st->move->node != node_id_ &&
      st->move->to_epoch == next.version && lost.empty()) {
    // A failed-over member removed as lost: latentctl ends that move at
    // once (nobody drains it), but its kept counts must still leave.
    lost.push_back(st->move->node);
  }
  if (!listed && !leaving_.load() && st.ok()) {
    for (const sync::MemberStatus& m : st->members) {
      if (m.id != node_id_ || m.state != sync::MemberState::kDown) continue;
      if (!declared_down_.exchange(true)) {
        options_.log(absl::StrCat(
            "this node was declared down (its heartbeats in Redis came later "
            "than the failure timeout) and failed over at epoch ",
            next.version,
            ": it stops sampling; restart it from its data directory to "
            "return"));
      }
      return absl::FailedPreconditionError(
          absl::StrCat("this node (", node_id_, ") is down in epoch ",
                       next.version, "; restart it to return"));
    }
  }
  if (!listed && !leaving_.load()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the ring no longer lists this node (", node_id_,
        "); leaving a running cluster is not supported yet, so it stays at "
        "epoch ",
        epoch()));
  }
  for (const hashring::Member& m : next.members) {
    if (m.id == node_id_) continue;
    LATENTD_RETURN_IF_ERROR(peers_->ClientFor(m).status());
    clocks_->Add(m.id);
  }
  // (A leaving node owns nothing in `next`: every key it holds moves.)
  // From here on, batches routed by the old ring are refused, and the keys
  // that move leave this shard.
  auto new_owner = [&](sync::Key k) {
    const std::string& id = next.members[ring->Owner(k)].id;
    return id == node_id_ ? std::string() : id;
  };
  // Both rings' members may send until the change ends (a joiner in its
  // own hand-off, a leaving member draining).
  const hashring::RingConfig current = ring_config();
  owner_->SetAdmission(next.version, AdmissionFor(next, ring, &current));
  std::vector<sync::KeyHandoff> handoffs = owner_->AdvanceEpoch(
      next.version, new_owner, node_id_, options_.handoff_chunk_keys);
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
  if (replicator_) {
    // A failed (or lost) owner's keys that this node owns now: the part of
    // their globals that no survivor re-seeds comes from the copies here.
    // Not while the ring still lists it (a lost member's drain epoch): its
    // keys are still its own, and these copies are what the ring without
    // it takes over.
    for (const std::string& dead : lost) {
      bool still_listed = false;
      for (const hashring::Member& m : next.members) {
        still_listed |= m.id == dead;
      }
      if (still_listed) continue;
      TakeOverReplicas(dead, next.version,
                       [&](sync::Key k) { return new_owner(k).empty(); });
    }
    // The backups of the new ring, now: an own batch awaiting a backup
    // that left (or died) is answered, so that no round, nor a GrowKeys
    // waiting for the rounds to end, holds phase 2 up. (Until phase 2 the
    // shard refuses the own batches, routed by the old ring: nothing is
    // copied meanwhile, and phase 2 refills.)
    LATENTD_RETURN_IF_ERROR(SetReplicaBackups(next, lost));
  }
  change_ = RingChange{.next = next,
                       .ring = ring,
                       .since = absl::Now(),
                       .leave = leave,
                       .lost = std::move(lost),
                       .failover = failover,
                       .detected_age_ms = detected_age_ms};
  ring_changing_.store(true);
  SendHandoffs();
  return absl::OkStatus();
}

absl::Status ClusterLink::AdvanceRingChange(sync::RedisClient* redis) {
  RingChange& c = *change_;
  if (!c.marked) {
    if (!outgoing_.empty()) return absl::OkStatus();  // still handing off
    // (Epochs this node skipped too: members may wait at one of them.)
    LATENTD_RETURN_IF_ERROR(
        MarkPhases(redis, "handoff", epoch(), c.next.version));
    c.marked = true;
  }
  bool listed = false;
  for (const hashring::Member& m : c.next.members) listed |= m.id == node_id_;
  if (!listed) {
    // Leaving: its keys are all with the remaining members; nothing of
    // this node's rounds goes on.
    options_.info(absl::StrCat("ring epoch ", c.next.version,
                               ": every key of this node handed off"));
    {
      absl::MutexLock l(&ring_mu_);
      ring_config_ = c.next;  // followed (not to be begun again)
      ring_ = c.ring;
    }
    change_.reset();
    ring_changing_.store(false);
    left_.store(true);
    return absl::OkStatus();
  }
  // This node marked itself above; every other old member must have too.
  LATENTD_ASSIGN_OR_RETURN(
      std::vector<std::string> waiting,
      NotInPhase(redis, "handoff", c.next.version, ring_config(), c.lost));
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
      absl::StatusOr<sync::Client*> client = peers_->ClientFor(m);
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
    absl::MutexLock l(&ring_mu_);
    before = std::move(ring_config_);
    ring_config_ = c.next;
    ring_ = c.ring;
  }
  // The change is over: only the new ring's members send from here on.
  owner_->SetAdmission(c.next.version, AdmissionFor(c.next, c.ring));
  for (const hashring::Member& m : before.members) {
    bool kept = false;
    for (const hashring::Member& n : c.next.members) kept |= n.id == m.id;
    if (!kept) {
      clocks_->MarkDead(m.id);  // no longer holds back SSP
      if (c.failover && replicator_ &&
          std::find(c.lost.begin(), c.lost.end(), m.id) != c.lost.end()) {
        // Failed over with copies: its counts stay (its keys' new owners
        // took its part over) until it returns or is removed as lost.
        kept_down_.push_back(m.id);
        options_.log(absl::StrCat("ring epoch ", c.next.version, ": ", m.id,
                                  " failed over; its counts stay in the "
                                  "model until it returns or is lost"));
      } else if (std::find(c.lost.begin(), c.lost.end(), m.id) !=
                 c.lost.end()) {
        // Lost: its documents are gone, so are its counts.
        owner_->RetractSender(m.id);
        options_.log(absl::StrCat("ring epoch ", c.next.version, ": ", m.id,
                                  " lost; its counts taken out here"));
      } else {
        owner_->ForgetSender(m.id);  // its unseen changes would pile up
      }
    }
  }
  for (const std::string& id : c.lost) {
    // A failed-over member now removed as lost (it was out of the ring
    // already): what it contributed leaves the model.
    auto kept = std::find(kept_down_.begin(), kept_down_.end(), id);
    bool was_member = false;
    for (const hashring::Member& m : before.members) was_member |= m.id == id;
    if (kept == kept_down_.end() || was_member) continue;
    kept_down_.erase(kept);
    owner_->RetractSender(id);
    options_.log(absl::StrCat("ring epoch ", c.next.version, ": ", id,
                              " lost; its counts taken out here"));
  }
  // (A failed-over member back in the ring: its new process's counts
  // replace the kept ones as it reaches each owner.)
  std::erase_if(kept_down_, [&c](const std::string& id) {
    for (const hashring::Member& m : c.next.members) {
      if (m.id == id) return true;
    }
    return false;
  });
  {
    absl::MutexLock l(&failed_over_mu_);
    if (c.failover) {
      for (const std::string& id : c.lost) failed_over_.push_back(id);
    } else {
      std::erase_if(failed_over_, [&c](const std::string& id) {
        return std::find(c.lost.begin(), c.lost.end(), id) != c.lost.end();
      });
    }
    std::erase_if(failed_over_, [&c](const std::string& id) {
      for (const hashring::Member& m : c.next.members) {
        if (m.id == id) return true;  // back
      }
      return false;
    });
  }
  // The backups of the new ring get what they must hold of this node's
  // keys (those it took over or was handed included).
  RefillReplicas(c.next);
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
      MarkPhases(redis, "effect", before.version, c.next.version);
  if (!marked.ok()) {
    options_.log(absl::StrCat(
        "ring epoch ", c.next.version,
        ": could not record it in effect here: ", marked.ToString()));
  }
  bool lost_out = !c.lost.empty();
  for (const hashring::Member& m : c.next.members) {
    lost_out &= std::find(c.lost.begin(), c.lost.end(), m.id) == c.lost.end();
  }
  if (lost_out && marked.ok()) {
    // Nobody drives a lost node's removal: the last member to put the ring
    // without it in effect ends the move (of several, one wins).
    absl::StatusOr<std::vector<std::string>> waiting =
        NotInPhase(redis, "effect", c.next.version, c.next);
    if (waiting.ok() && waiting->empty()) {
      absl::StatusOr<sync::MoveRecord> done = sync::FinishMove(
          redis, options_.cluster, c.next.version, sync::MoveCounters{});
      if (done.ok()) {
        options_.info(absl::StrCat("ring epoch ", c.next.version,
                                   ": removal of lost ", c.lost.front(),
                                   " done"));
      }
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

void ClusterLink::SendHandoffs() {
  size_t kept = 0;
  for (size_t j = 0; j < outgoing_.size(); ++j) {
    sync::KeyHandoff& h = outgoing_[j];
    sync::Client* to = peers_->Find(h.to_node());
    absl::Status sent = absl::NotFoundError("no such peer");
    if (to != nullptr) {
      sent = to->CallSync(sync::MESSAGE_TYPE_KEY_HANDOFF, h.SerializeAsString(),
                          options_.call_timeout)
                 .status();
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

std::optional<sync::RemoveMode> ClusterLink::LeaveRequested() const {
  absl::MutexLock l(&leave_mu_);
  return leave_mode_;
}

absl::Status ClusterLink::FailLeave(std::string_view reason) {
  if (!LeaveRequested().has_value()) {
    return absl::FailedPreconditionError(
        "no removal of this node is running (latentctl cluster remove-node)");
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           sync::RedisClient::Connect(options_.redis_url));
  std::string why(reason.substr(0, 500));
  for (char& c : why) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (why.empty()) why = "unknown error";
  LATENTD_RETURN_IF_ERROR(
      sync::FailMove(redis.get(), options_.cluster, epoch(),
                     absl::StrCat(node_id_, " could not leave: ", why)));
  absl::MutexLock l(&leave_mu_);
  leave_mode_.reset();  // until a retried removal's drain epoch
  return absl::OkStatus();
}

absl::Status ClusterLink::Leave(const sync::MoveCounters& counters) {
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
  Finish();
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
  LATENTD_RETURN_IF_ERROR(AwaitPhase(redis.get(), next, "effect", deadline));
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
