#include "service/cluster/cluster_link.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hashring/ring_config.h"
#include "service/cluster/internal/join_redis.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

ClusterLink::ClusterLink(ClusterLinkOptions options, SyncedTopicTable* topics,
                         uint32_t dimension, LinkedTableFactory factory)
    : options_(std::move(options)),
      topics_(topics),
      table_(topics),
      factory_(std::move(factory)),
      owner_(std::make_unique<sync::OwnerShard>(dimension)),
      replicas_(std::make_unique<sync::ReplicaStore>(dimension)),
      clocks_(std::make_unique<sync::ClockTable>(std::vector<std::string>{})) {
  if (topics != nullptr) {
    apply_pending_ = [topics] { return topics->ApplyPending(); };
  }
}

absl::StatusOr<std::unique_ptr<ClusterLink>> ClusterLink::Create(
    ClusterLinkOptions options, SyncedTopicTable* table) {
  std::unique_ptr<ClusterLink> link(
      new ClusterLink(std::move(options), table, table->dimension(), nullptr));
  LATENTD_RETURN_IF_ERROR(link->StartServer());
  LATENTD_RETURN_IF_ERROR(link->Join());
  return link;
}

absl::StatusOr<std::unique_ptr<ClusterLink>> ClusterLink::Create(
    ClusterLinkOptions options, uint32_t dimension,
    LinkedTableFactory factory) {
  std::unique_ptr<ClusterLink> link(new ClusterLink(
      std::move(options), nullptr, dimension, std::move(factory)));
  LATENTD_RETURN_IF_ERROR(link->StartServer());
  LATENTD_RETURN_IF_ERROR(link->Join());
  return link;
}

ClusterLink::~ClusterLink() { Stop(); }

absl::Status ClusterLink::StartServer() {
  if (options_.cluster_key.empty() && !options_.insecure) {
    return absl::FailedPreconditionError(
        "cluster mode needs the cluster key: --cluster-key FILE (the same "
        "file on every node; make one with `openssl rand -hex 32 > FILE; "
        "chmod 600 FILE`), or --insecure to run the sync port without "
        "authentication (loopback development only)");
  }
  std::string host;
  uint16_t port = 0;
  LATENTD_RETURN_IF_ERROR(sync::SplitHostPort(options_.listen, &host, &port));
  loop_ = std::make_unique<sync::EventLoop>(1);
  sync::ServerOptions so;
  so.host = host;
  so.port = port;
  so.log = options_.log;
  so.max_connections = options_.max_connections;
  so.max_connections_per_address = options_.max_connections_per_address;
  so.idle_timeout = options_.idle_timeout;
  so.max_request_bytes_in_flight = options_.max_request_bytes_in_flight;
  if (!options_.cluster_key.empty()) {
    so.auth = std::make_shared<sync::PeerAuth>(sync::PeerAuth{
        options_.cluster_key, options_.node_id, options_.tls_require_node_id});
  }
  if (options_.tls.enabled()) {
    LATENTD_ASSIGN_OR_RETURN(so.tls,
                             sync::TlsContext::ForMutualServer(options_.tls));
    LATENTD_ASSIGN_OR_RETURN(client_tls_,
                             sync::TlsContext::ForMutualClient(options_.tls));
  }
  LATENTD_ASSIGN_OR_RETURN(
      server_, sync::Server::Start(loop_.get(), so,
                                   [this](sync::Frame f, sync::Responder r) {
                                     HandleFrame(std::move(f), std::move(r));
                                   }));
  address_ = absl::StrCat(host, ":", server_->port());
  node_id_ = options_.node_id.empty() ? address_ : options_.node_id;
  if (so.auth != nullptr) {
    client_auth_ = std::make_shared<sync::PeerAuth>(sync::PeerAuth{
        options_.cluster_key, node_id_, options_.tls_require_node_id});
  } else if (so.tls != nullptr) {
    options_.log(absl::StrCat(
        "INSECURE: the sync port ", address_,
        " runs without the cluster key (--insecure): members are proven by "
        "their TLS certificates alone, and any of them may speak in "
        "another's name. Add --cluster-key FILE"));
  } else {
    options_.log(absl::StrCat(
        "INSECURE: the sync port ", address_,
        " runs without authentication (--insecure): any process that can "
        "reach it can change this cluster's model. Use --cluster-key FILE "
        "outside loopback development"));
  }
  PeerSet::Options po;
  po.loop = loop_.get();
  po.heartbeat = options_.heartbeat;
  po.call_timeout = options_.call_timeout;
  po.dead_after = options_.dead_after;
  po.log = options_.log;
  po.info = options_.info;
  po.client.log = options_.log;
  po.client.auth = client_auth_;
  po.client.tls = client_tls_;
  peers_ = std::make_unique<PeerSet>(std::move(po), clocks_.get(), [this] {
    sync::Progress p;
    p.set_node_id(node_id_);
    p.set_clock(sweep_.load());
    p.set_finished(finished_.load());
    p.set_ready(ready_.load());
    return p;
  });
  return absl::OkStatus();
}

// A frame on an authenticated connection speaks only for the node that
// proved the cluster key on it.
absl::Status ClusterLink::CheckSender(const sync::Frame& request,
                                      const std::string& claimed) {
  if (request.peer_id.empty() || request.peer_id == claimed) {
    return absl::OkStatus();
  }
  const absl::Status refused = absl::PermissionDeniedError(absl::StrCat(
      "a frame claiming to come from node '", claimed,
      "' arrived on the connection of node '", request.peer_id, "'; refused"));
  sender_mismatches_.fetch_add(1);
  LogRefusal(mismatch_log_, std::string(refused.message()));
  return refused;
}

void ClusterLink::LogRefusal(log::Throttle& throttle, const std::string& line) {
  if (const int64_t held = throttle.Pass(); held >= 0) {
    options_.log(held == 0 ? line
                           : absl::StrCat(line, " (and ", held,
                                          " refusals not logged since the "
                                          "last one)"));
  }
}

void ClusterLink::HandleFrame(sync::Frame request, sync::Responder responder) {
  switch (request.type) {
    case sync::MESSAGE_TYPE_DELTA_BATCH: {
      sync::DeltaBatch batch;
      if (!batch.ParseFromString(request.payload)) {
        responder.Reply(absl::InvalidArgumentError("unparsable DeltaBatch"));
        return;
      }
      if (absl::Status s = CheckSender(request, batch.node_id()); !s.ok()) {
        responder.Reply(s);
        return;
      }
      sync::DeltaReply reply;
      absl::Status s = owner_->Apply(batch, &reply);
      if (!s.ok()) {
        // Refusals by ring epoch are an expected part of a ring change.
        const bool epoch = absl::IsFailedPrecondition(s) ||
                           (absl::IsUnavailable(s) &&
                            absl::StrContains(s.message(), "ring epoch"));
        if (!epoch) {
          LogRefusal(absl::IsPermissionDenied(s)  ? not_member_log_
                     : absl::IsInvalidArgument(s) ? invalid_log_
                                                  : invalid_log_,
                     absl::StrCat("rejected delta batch from ", batch.node_id(),
                                  ": ", s.ToString()));
        }
        responder.Reply(s);
        return;
      }
      responder.Reply(reply.SerializeAsString());
      return;
    }
    case sync::MESSAGE_TYPE_PROGRESS: {
      sync::Progress p;
      if (!p.ParseFromString(request.payload)) {
        responder.Reply(absl::InvalidArgumentError("unparsable Progress"));
        return;
      }
      if (absl::Status s = CheckSender(request, p.node_id()); !s.ok()) {
        responder.Reply(s);
        return;
      }
      // A member of this node's ring (or, before the ring is known, anyone)
      // counts; an id no ring here lists is kept aside only if the cluster's
      // registry names it: a joiner whose ring this node has not reached
      // yet (docs/design.md, "Consistency"). Any other id is refused, and
      // the registry read again in case it names a node just registered.
      if (!owner_->Admits(p.node_id()) && !InRegistry(p.node_id())) {
        registry_stale_.store(true);
        progress_refused_.fetch_add(1);
        const absl::Status refused = absl::PermissionDeniedError(absl::StrCat(
            "progress from '", p.node_id(),
            "' refused: not a member of ring epoch ", owner_->epoch(),
            " nor a node that cluster ", options_.cluster,
            "'s registry lists (members, pending); nothing of it was "
            "recorded"));
        LogRefusal(progress_log_, std::string(refused.message()));
        responder.Reply(refused);
        return;
      }
      if (!clocks_->Update(p.node_id(), p.clock(), p.finished()) ||
          (p.ready() && !clocks_->MarkReady(p.node_id()))) {
        // Only when many registered ids that no ring names have sent
        // progress.
        responder.Reply(absl::ResourceExhaustedError(absl::StrCat(
            "progress from '", p.node_id(),
            "' dropped: not a member, and too many non-members' progress "
            "is kept already")));
        return;
      }
      sync::ProgressReply reply;
      reply.set_clock(sweep_.load());
      reply.set_finished(finished_.load());
      responder.Reply(reply.SerializeAsString());
      return;
    }
    case sync::MESSAGE_TYPE_KEY_HANDOFF: {
      sync::KeyHandoff h;
      if (!h.ParseFromString(request.payload)) {
        responder.Reply(absl::InvalidArgumentError("unparsable KeyHandoff"));
        return;
      }
      if (absl::Status s = CheckSender(request, h.from_node()); !s.ok()) {
        responder.Reply(s);
        return;
      }
      if (!owner_->Admits(h.from_node())) {
        // Perhaps a member of a ring this node has not reached: it sends
        // again until taken.
        handoffs_refused_.fetch_add(1);
        const absl::Status refused = absl::UnavailableError(
            absl::StrCat("key hand-off from '", h.from_node(),
                         "', not a member of this node's ring epoch ",
                         owner_->epoch(), "; nothing was imported"));
        LogRefusal(handoff_log_, std::string(refused.message()));
        responder.Reply(refused);
        return;
      }
      absl::Status s = owner_->ImportKeys(h);
      if (s.ok()) {
        handoff_keys_in_.fetch_add(h.keys_size());
        handoff_bytes_in_.fetch_add(request.payload.size());
      }
      if (!s.ok()) {
        options_.log(absl::StrCat("refused key hand-off from ", h.from_node(),
                                  " (epoch ", h.epoch(), "): ", s.ToString()));
        responder.Reply(s);
        return;
      }
      responder.Reply(std::string());
      return;
    }
    case sync::MESSAGE_TYPE_REPLICA_UPDATE: {
      sync::ReplicaUpdate u;
      if (!u.ParseFromString(request.payload)) {
        responder.Reply(absl::InvalidArgumentError("unparsable ReplicaUpdate"));
        return;
      }
      if (absl::Status s = CheckSender(request, u.owner()); !s.ok()) {
        responder.Reply(s);
        return;
      }
      if (!owner_->Admits(u.owner())) {
        // As a hand-off: perhaps a member of a ring not reached here yet,
        // which sends again until taken; otherwise no copy is kept.
        replicas_refused_.fetch_add(1);
        const absl::Status refused = absl::UnavailableError(
            absl::StrCat("replica update from '", u.owner(),
                         "', not a member of this node's ring epoch ",
                         owner_->epoch(), "; nothing was kept"));
        LogRefusal(replica_log_, std::string(refused.message()));
        responder.Reply(refused);
        return;
      }
      bool duplicate = false;
      if (absl::Status s = replicas_->Apply(u, &duplicate); !s.ok()) {
        options_.log(absl::StrCat("refused replica update from ", u.owner(),
                                  ": ", s.ToString()));
        responder.Reply(s);
        return;
      }
      responder.Reply(std::string());
      return;
    }
    default:
      responder.Reply(absl::UnimplementedError(
          absl::StrCat("unknown message type ", request.type)));
  }
}

sync::OwnerAdmission ClusterLink::AdmissionFor(
    const hashring::RingConfig& config,
    std::shared_ptr<const hashring::Ring> ring,
    const hashring::RingConfig* also) const {
  sync::OwnerAdmission a;
  uint32_t self = static_cast<uint32_t>(config.members.size());
  for (uint32_t i = 0; i < config.members.size(); ++i) {
    a.members.insert(config.members[i].id);
    if (config.members[i].id == node_id_) self = i;
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
  a.counts = topics_ != nullptr;
  a.max_new_keys_per_sender = options_.max_new_keys_per_member;
  return a;
}

absl::Status ClusterLink::Join() {
  // Every Redis step of the join rides out a brief outage (a restarting
  // Redis, a flapping link): retried until --join-timeout.
  internal::JoinRedisOptions jo;
  jo.url = options_.redis_url;
  jo.cluster = options_.cluster;
  jo.give_up_after = options_.join_timeout;
  jo.log = options_.log;
  jo.info = options_.info;
  internal::JoinRedis redis(std::move(jo));
  // Heartbeats first: a node restarting must beat before the others look
  // at its heartbeat again (so that a quick restart is not failed over).
  liveness_ = std::thread([this] { LivenessLoop(); });
  // A node failed over and restarted from its data directory returns as an
  // admitted node joins (docs/design.md, "Failure detection and
  // failover"): the members hand its keys back, then it pushes its counts.
  bool returning = false;
  if (!options_.join) {
    LATENTD_ASSIGN_OR_RETURN(returning, IsDown(redis));
  }
  const bool joining = options_.join || returning;
  hashring::RingConfig config;
  if (options_.join) {
    LATENTD_ASSIGN_OR_RETURN(config, AwaitAdmission(redis));
  } else if (returning) {
    LATENTD_ASSIGN_OR_RETURN(config, AwaitReturn(redis));
  } else {
    sync::MembershipOptions mo;
    mo.cluster = options_.cluster;
    mo.node_id = node_id_;
    mo.address = address_;
    mo.expected_members = options_.expected_members;
    // (Registering again and reading the ring are safe to repeat; the
    // wait is bounded once, not per try.)
    const absl::Time deadline = absl::Now() + options_.join_timeout;
    LATENTD_ASSIGN_OR_RETURN(
        config, redis.Run<hashring::RingConfig>([&](sync::RedisClient* c) {
          mo.wait_timeout =
              std::max(deadline - absl::Now(), absl::Milliseconds(1));
          return sync::JoinCluster(c, mo);
        }));
  }
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(config));
  if (factory_) {
    uint32_t self = 0;
    while (self < config.members.size() && config.members[self].id != node_id_)
      ++self;
    if (self == config.members.size()) {
      return absl::InternalError(absl::StrCat("the ring of cluster ",
                                              options_.cluster,
                                              " does not list ", node_id_));
    }
    LATENTD_ASSIGN_OR_RETURN(LinkedTable t, factory_(config, *ring, self));
    if (t.table == nullptr || !t.apply_pending ||
        t.table->dimension() != owner_->dimension()) {
      return absl::InternalError(
          "the linked table is missing or of another dimension");
    }
    table_ = t.table;
    apply_pending_ = std::move(t.apply_pending);
  }
  if (options_.key_replicas > 1) {
    sync::OwnerReplicatorOptions ro;
    ro.node_id = node_id_;
    ro.log = options_.log;
    ro.ack_timeout = options_.call_timeout;
    replicator_ = std::make_unique<sync::OwnerReplicator>(
        ro, owner_.get(),
        [this](const std::string& backup, const sync::ReplicaUpdate& u,
               std::function<void(absl::Status)> done) {
          SendReplicaUpdate(backup, u, std::move(done));
        });
    LATENTD_RETURN_IF_ERROR(SetReplicaBackups(config));
    // (Drops whatever the backups kept of an earlier process of this node.)
    RefillReplicas(config);
  }
  LATENTD_ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<sync::OwnerChannel>> channels,
      ChannelsFor(config));
  if (joining) {
    // Start at the cluster's clock, not at 0: SSP would otherwise hold
    // everyone back until this node caught up.
    sweep_.store(PeersClock());
    clocks_->Update(node_id_, sweep_.load(), false);
  } else if (const uint64_t clock = PeersClock(); clock > 0) {
    // Restarting into a running cluster (docs/design.md, "Restart and
    // rejoin"): the owners take this node's previous incarnation's counts
    // out as this one pushes its store's, and the owner shard here, new
    // and empty, is re-seeded by every member. Start at the cluster's
    // clock, as a joiner does.
    sweep_.store(clock);
    clocks_->Update(node_id_, clock, false);
    options_.info(absl::StrCat("rejoining cluster ", options_.cluster,
                               " at epoch ", config.version, ", sweep ", clock,
                               ": the owners replace this node's previous "
                               "counts with its store's"));
  }
  std::vector<uint32_t> key_owner(table_->num_keys());
  for (size_t i = 0; i < key_owner.size(); ++i) {
    key_owner[i] = ring->Owner(table_->key(i));
  }
  owner_->SetAdmission(config.version, AdmissionFor(config, ring));
  owner_->SetEpoch(config.version);
  {
    absl::MutexLock l(&ring_mu_);
    ring_config_ = std::move(config);
    ring_ = std::move(ring);
  }
  sync::SynchronizerOptions so;
  so.node_id = node_id_;
  // Increasing over time (a later process of this node supersedes an
  // earlier one, sync/owner_shard.h): µs since 1970 (51 bits until 2041),
  // then 12 random bits.
  so.incarnation = sync::IncarnationAt(absl::Now(), std::random_device{}());
  so.round_byte_budget = options_.round_byte_budget;
  so.round_interval = options_.round_interval;
  so.min_key_weight = options_.min_key_weight;
  so.epoch = epoch();
  so.log = options_.log;
  sync_ = std::make_unique<sync::Synchronizer>(so, table_, std::move(key_owner),
                                               std::move(channels));
  peers_->StartHeartbeats();
  if (joining) {
    // The members hand this node the keys the new ring gives it; once all
    // have (so that a key's changes reach it in order), push this node's
    // counts and take the globals, as any holder.
    const absl::Time deadline = absl::Now() + options_.join_timeout;
    LATENTD_RETURN_IF_ERROR(redis.Run([&](sync::RedisClient* c) {
      return AwaitPhase(c, ring_config(), "handoff", deadline);
    }));
    sync_->Start();
    sync_->Flush();
    ready_.store(true);
    clocks_->MarkReady(node_id_);
    peers_->Kick();
    sync_->Flush();
    LATENTD_RETURN_IF_ERROR(apply_pending_());
    if (options_.ring_poll > absl::ZeroDuration()) {
      ring_watch_ = std::thread([this] { WatchRing(); });
    }
    // The move is done once every member routes by the new ring.
    LATENTD_RETURN_IF_ERROR(redis.Run([&](sync::RedisClient* c) {
      return AwaitPhase(c, ring_config(), "effect", deadline);
    }));
    sync::MoveCounters moved;
    moved.keys = handoff_keys_in_.load();
    moved.bytes = handoff_bytes_in_.load();
    absl::StatusOr<sync::MoveRecord> done =
        redis.Run<sync::MoveRecord>([&](sync::RedisClient* c) {
          return sync::FinishMove(c, options_.cluster, epoch(), moved);
        });
    if (!done.ok()) {
      options_.log(absl::StrCat(
          "joined at epoch ", epoch(),
          ", but the move record was not closed: ", done.status().ToString()));
    }
    options_.info(absl::StrCat(returning ? "returned to" : "joined",
                               " cluster ", options_.cluster, " at epoch ",
                               epoch(), " (sweep ", sweep(), "); took ",
                               moved.keys, " keys"));
    return absl::OkStatus();
  }
  sync_->Start();
  if (options_.ring_poll > absl::ZeroDuration()) {
    ring_watch_ = std::thread([this] { WatchRing(); });
  }
  // Start from the same global state everywhere: push the initial counts,
  // wait until every node has, pull theirs. (Nodes that sample from their
  // own counts alone first drift apart, topic labels and all, and take
  // many sweeps to agree again.)
  sync_->Flush();
  ready_.store(true);
  clocks_->MarkReady(node_id_);
  peers_->Kick();
  if (!clocks_->WaitAllReady(absl::Now() + options_.join_timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("cluster ", options_.cluster,
                     ": not every node pushed its initial state in time"));
  }
  sync_->Flush();
  return apply_pending_();
}

bool ClusterLink::WaitAllFinished(absl::Duration timeout) {
  return clocks_->WaitAllFinished(absl::Now() + timeout);
}

std::vector<std::string> ClusterLink::UnavailablePeers() const {
  return peers_ != nullptr ? peers_->Unavailable() : std::vector<std::string>{};
}

absl::Status ClusterLink::BeforeSweep(uint64_t t) {
  if (options_.consistency.bounded) {
    const uint64_t s = options_.consistency.staleness;
    if (t > s + 1) {
      // Every live node must have completed sweep t − 1 − s.
      while (!clocks_->WaitForMin(t - 1 - s,
                                  absl::Now() + absl::Milliseconds(50))) {
        LATENTD_RETURN_IF_ERROR(apply_pending_());
      }
      sync_->Flush();  // pull what they flushed
    }
  }
  return apply_pending_();
}

void ClusterLink::EndSweep(uint64_t batches) {
  if (options_.consistency.bounded || options_.flush_each_sweep) {
    sync_->Flush();  // push this sweep
  } else {
    sync_->Kick(/*complete=*/true);
  }
  if (options_.rounds_per_sweep > 0) {
    kick_every_.store(std::max<uint64_t>(
        1, batches / static_cast<uint64_t>(options_.rounds_per_sweep)));
  }
}

void ClusterLink::AnnounceSweep(uint64_t t) {
  sweep_.store(t);
  sync_->set_clock(t);
  clocks_->Update(node_id_, t, false);
  peers_->Kick();
}

absl::Status ClusterLink::AfterBatch(std::span<const WordTopicDelta> applied) {
  topics_->MarkApplied(applied);
  return AfterWrite();
}

absl::Status ClusterLink::AfterWrite() {
  const uint64_t every = kick_every_.load(std::memory_order_relaxed);
  if (every != 0 && ++batches_since_kick_ >= every && sync_) {
    batches_since_kick_ = 0;
    sync_->Kick();
  }
  return apply_pending_();
}

void ClusterLink::Finish() {
  // Push what is left before saying so: once every node is finished, the
  // globals are final, and one pass pulls them.
  sync_->Flush();
  finished_.store(true);
  clocks_->Update(node_id_, sweep_.load(), true);
  peers_->Kick();
}

sync::Synchronizer::PassResult ClusterLink::DrainPass() {
  sync::Synchronizer::PassResult r = sync_->Flush();
  absl::Status s = apply_pending_();
  if (!s.ok()) {
    options_.log(s.ToString());
    r.quiet = false;
  }
  return r;
}

void ClusterLink::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    absl::MutexLock l(&stop_mu_);
    stopping_ = true;
  }
  if (peers_ != nullptr) peers_->StopHeartbeats();
  if (ring_watch_.joinable()) ring_watch_.join();
  if (liveness_.joinable()) liveness_.join();
  if (!outgoing_.empty()) {
    options_.log(absl::StrCat(
        "stopping with ", outgoing_.size(),
        " key hand-off(s) not taken by their new owners: those keys' "
        "globals are lost to the cluster"));
  }
  // (Answers the own batches still awaiting their backups.)
  if (replicator_) replicator_->Stop();
  if (sync_) sync_->Stop();
  if (server_) server_->Stop();
  if (peers_ != nullptr) peers_->Close();
}

hashring::RingConfig ClusterLink::ring_config() const {
  absl::MutexLock l(&ring_mu_);
  return ring_config_;
}

std::shared_ptr<const hashring::Ring> ClusterLink::ring() const {
  absl::MutexLock l(&ring_mu_);
  return ring_;
}

uint64_t ClusterLink::epoch() const {
  absl::MutexLock l(&ring_mu_);
  return ring_config_.version;
}

size_t ClusterLink::pending_handoffs() const { return outgoing_count_.load(); }

absl::Status ClusterLink::GrowKeys(const std::function<absl::Status()>& grow) {
  absl::MutexLock route(&route_mu_);
  const std::shared_ptr<const hashring::Ring> r = ring();
  return sync_->AddKeys(grow, [&r](sync::Key key) { return r->Owner(key); });
}

}  // namespace latentd
