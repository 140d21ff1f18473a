#include "service/cluster/cluster_link.h"

#include <algorithm>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hashring/ring_config.h"
#include "service/cluster/internal/join_redis.h"
#include "service/cluster/internal/join_steps.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

ClusterLink::ClusterLink(ClusterLinkOptions options, SyncedTopicTable* topics,
                         uint32_t dimension, LinkedTableFactory factory)
    : options_(std::move(options)),
      topics_(topics),
      table_(topics),
      factory_(std::move(factory)),
      owner_(
          std::make_unique<sync::OwnerShard>(dimension, /*awaits_ring=*/true)),
      replicas_(std::make_unique<sync::ReplicaStore>(dimension)),
      clocks_(std::make_unique<sync::ClockTable>(std::vector<std::string>{})) {
  SyncFrameHandler::Parts parts;
  parts.owner = owner_.get();
  parts.replicas = replicas_.get();
  parts.clocks = clocks_.get();
  parts.progress = [this] {
    sync::ProgressReply reply;
    reply.set_clock(sweep_.load());
    reply.set_finished(finished_.load());
    return reply;
  };
  parts.cluster = options_.cluster;
  parts.log = options_.log;
  parts.info = options_.info;
  frames_ = std::make_unique<SyncFrameHandler>(std::move(parts));
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
  // A kept address (on_listening) is drawn where no outgoing connection
  // can hold it when the node comes back.
  so.durable_port = options_.on_listening != nullptr;
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
      server_, sync::Server::Start(
                   loop_.get(), so, [this](sync::Frame f, sync::Responder r) {
                     frames_->Handle(std::move(f), std::move(r));
                   }));
  address_ = absl::StrCat(host, ":", server_->port());
  if (options_.on_listening)
    LATENTD_RETURN_IF_ERROR(options_.on_listening(address_));
  node_id_ = options_.node_id.empty() ? address_ : options_.node_id;
  phases_ = std::make_unique<EpochPhases>(options_.cluster, node_id_);
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
  key_replicas_ = std::make_unique<KeyReplicas>(
      &options_, node_id_, owner_.get(), replicas_.get(), peers_.get());
  RingFollower::Parts fp;
  fp.owner = owner_.get();
  fp.clocks = clocks_.get();
  fp.peers = peers_.get();
  fp.key_replicas = key_replicas_.get();
  fp.phases = phases_.get();
  fp.frames = frames_.get();
  fp.node_id = node_id_;
  fp.counts = topics_ != nullptr;
  fp.finish = [this] { Finish(); };
  follower_ = std::make_unique<RingFollower>(&options_, std::move(fp));
  return absl::OkStatus();
}

absl::Status ClusterLink::Join() {
  // Each Redis step of the join is retried until --join-timeout.
  internal::JoinRedisOptions jo;
  jo.url = options_.redis_url;
  jo.cluster = options_.cluster;
  jo.give_up_after = options_.join_timeout;
  jo.log = options_.log;
  jo.info = options_.info;
  internal::JoinRedis redis(std::move(jo));
  // Heartbeats first, so that a quick restart is not failed over.
  LivenessMonitor::Parts lp;
  lp.node_id = node_id_;
  lp.epoch = [this] { return epoch(); };
  lp.heartbeat = [this] { return Heartbeat(); };
  lp.may_judge = [this] {
    return ready_.load() && !stopping_.load() && !follower_->leaving() &&
           !follower_->declared_down();
  };
  lp.heard_from = [this](const std::string& id) { return clocks_->Heard(id); };
  liveness_ = std::make_unique<LivenessMonitor>(&options_, std::move(lp));
  liveness_->Start();
  // A failed-over node returns as a joiner joins (keys back, then counts);
  // once admitted, a start with --cluster-join is a restart.
  LATENTD_ASSIGN_OR_RETURN(std::optional<sync::MemberState> state,
                           internal::StateOf(redis, options_, node_id_));
  const bool returning = state == sync::MemberState::kDown;
  const bool admit = options_.join && (!state.has_value() ||
                                       state == sync::MemberState::kPending);
  const bool joining = admit || returning;
  hashring::RingConfig config;
  if (admit) {
    LATENTD_ASSIGN_OR_RETURN(
        config, internal::AwaitAdmission(redis, options_, node_id_, address_));
  } else if (returning) {
    LATENTD_ASSIGN_OR_RETURN(
        config, internal::AwaitReturn(redis, options_, node_id_, address_));
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
  LATENTD_RETURN_IF_ERROR(key_replicas_->Start(config));
  frames_->SetKeyImporter(
      [replicas = key_replicas_.get()](const sync::KeyHandoff& h) {
        return replicas->ImportKeys(h);
      });
  LATENTD_ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<sync::OwnerChannel>> channels,
      follower_->ChannelsFor(config));
  if (joining) {
    // Start at the cluster's clock, not at 0: SSP would otherwise hold
    // everyone back until this node caught up.
    sweep_.store(PeersClock());
    clocks_->Update(node_id_, sweep_.load(), false);
  } else if (const uint64_t clock = PeersClock(); clock > 0) {
    // Restarting into a running cluster (design.md, "Restart and rejoin"):
    // owners swap this node's old counts for its store's; members re-seed
    // its new shard. Start at the cluster's clock, as a joiner does.
    sweep_.store(clock);
    clocks_->Update(node_id_, clock, false);
    options_.info(absl::StrCat("rejoining cluster ", options_.cluster,
                               " at epoch ", config.version, ", sweep ", clock,
                               ": the owners replace this node's previous "
                               "counts with its store's"));
  }
  const std::optional<sync::RemoveMode> leave =
      joining ? std::nullopt
              : internal::ResumeInterruptedMove(redis, options_, *phases_,
                                                config, node_id_);
  if (leave.has_value()) follower_->ResumeLeave(*leave);
  std::vector<uint32_t> key_owner(table_->num_keys());
  for (size_t i = 0; i < key_owner.size(); ++i) {
    key_owner[i] = ring->Owner(table_->key(i));
  }
  follower_->SetInitialRing(std::move(config), std::move(ring));
  sync::SynchronizerOptions so;
  so.node_id = node_id_;
  // Increasing over time (a later process of this node supersedes an
  // earlier one, sync/owner_shard.h): sync::IncarnationAt.
  so.incarnation = sync::IncarnationAt(absl::Now(), std::random_device{}());
  so.round_byte_budget = options_.round_byte_budget;
  so.round_interval = options_.round_interval;
  so.min_key_weight = options_.min_key_weight;
  so.epoch = epoch();
  so.log = options_.log;
  so.info = options_.info;
  sync_ = std::make_unique<sync::Synchronizer>(so, table_, std::move(key_owner),
                                               std::move(channels));
  peers_->StartHeartbeats();
  if (joining) {
    // Once every member handed it its keys (a key's changes arrive in
    // order), push this node's counts and take the globals, as any holder.
    const absl::Time deadline = absl::Now() + options_.join_timeout;
    LATENTD_RETURN_IF_ERROR(redis.Run([&](sync::RedisClient* c) {
      return internal::AwaitHandoffs(c, *phases_, ring_config(), deadline);
    }));
    sync_->Start();
    sync_->Flush();
    ready_.store(true);
    clocks_->MarkReady(node_id_);
    peers_->Kick();
    sync_->Flush();
    LATENTD_RETURN_IF_ERROR(apply_pending_());
    follower_->Start(sync_.get(), table_);
    // The move is done once every member routes by the new ring.
    LATENTD_RETURN_IF_ERROR(redis.Run([&](sync::RedisClient* c) {
      return phases_->Await(c, ring_config(), "effect", deadline);
    }));
    sync::MoveCounters moved;
    moved.keys = frames_->handoff_keys_in();
    moved.bytes = frames_->handoff_bytes_in();
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
  follower_->Start(sync_.get(), table_);
  // One global state everywhere first (else nodes drift apart, topics too).
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

uint64_t ClusterLink::PeersClock() {
  sync::Progress p;
  p.set_node_id(node_id_);
  const std::string payload = p.SerializeAsString();
  uint64_t clock = 0;
  std::vector<sync::Client*> ask;
  for (const auto& [id, client] : peers_->All()) ask.push_back(client);
  // A peer refuses progress from an id its registry copy lacks until its
  // ring watcher reads it again (a ring poll): a joiner asks again, a few
  // polls at most. A peer that does not answer is not asked again.
  for (int round = 0; round < 8 && !ask.empty(); ++round) {
    if (round > 0 && !stop_.SleepUnlessStopped(options_.ring_poll)) break;
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

sync::Heartbeat ClusterLink::Heartbeat() const {
  sync::Heartbeat beat;
  beat.sweep = sweep();
  beat.keys = owner_->num_keys();
  beat.documents = documents_.load(std::memory_order_relaxed);
  {
    absl::MutexLock lock(&ll_mu_);
    beat.log_likelihood = ll_part_;
  }
  beat.stopped_failed = stopped_failed_.load();
  if (drain_requested() && !beat.stopped_failed) {
    beat.settled_checksum = settled_checksum_.load(std::memory_order_relaxed);
  }
  beat.epoch = epoch();
  const sync::OwnerShardStats st = owner_->stats();
  beat.senders_retracted = st.senders_retracted;
  beat.reseed_refused = st.batches_reseed_refused;
  beat.stale_refused = st.batches_stale_refused;
  beat.under_replicated = replication_stats().keys_under_replicated;
  beat.failovers = failovers();
  beat.last_failover_ms =
      failovers() == 0 ? -1 : follower_->last_failover_us() / 1000;
  beat.key_copies = std::max<uint32_t>(options_.key_replicas, 1);
  return beat;
}

bool ClusterLink::WaitAllFinished(absl::Duration timeout) {
  return clocks_->WaitAllFinished(absl::Now() + timeout);
}

std::vector<std::string> ClusterLink::UnavailablePeers() const {
  return peers_ != nullptr ? peers_->Unavailable() : std::vector<std::string>{};
}

absl::Status ClusterLink::BeforeSweep(uint64_t t,
                                      const std::function<bool()>& give_up) {
  if (options_.consistency.bounded) {
    const uint64_t s = options_.consistency.staleness;
    if (t > s + 1) {
      // Every live node must have completed sweep t − 1 − s.
      while (!clocks_->WaitForMin(t - 1 - s,
                                  absl::Now() + absl::Milliseconds(50))) {
        LATENTD_RETURN_IF_ERROR(apply_pending_());
        if (drain_requested() || (give_up && give_up())) {
          return absl::CancelledError("draining or stopping");
        }
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
  stop_.Stop();
  if (peers_ != nullptr) peers_->StopHeartbeats();
  if (follower_ != nullptr) follower_->Stop();
  if (liveness_ != nullptr) liveness_->Stop();
  // (Answers the own batches still awaiting their backups.)
  if (key_replicas_) key_replicas_->Stop();
  if (sync_) sync_->Stop();
  if (server_) server_->Stop();
  if (peers_ != nullptr) peers_->Close();
}

absl::Status ClusterLink::GrowKeys(const std::function<absl::Status()>& grow) {
  return follower_->WithRoute([&](const hashring::Ring& r) {
    return sync_->AddKeys(grow, [&r](sync::Key key) { return r.Owner(key); });
  });
}

}  // namespace latentd
