#include "service/cluster/cluster_node.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <random>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "corpora/corpus_builder.h"
#include "corpora/status_macros.h"
#include "hashring/ring.h"
#include "sampler/doc_topic_stats.h"

namespace latentd {

// A remote member: its transport client, heartbeat state.
struct ClusterNode::Peer {
  std::string id;
  std::unique_ptr<sync::Client> client;
  absl::Mutex mu;
  absl::Time last_ok ABSL_GUARDED_BY(mu) = absl::Now();
  bool reported_down ABSL_GUARDED_BY(mu) = false;
  bool in_flight ABSL_GUARDED_BY(mu) = false;  // one heartbeat at a time
};

namespace {

absl::Status SplitHostPort(const std::string& hp, std::string* host,
                           uint16_t* port) {
  const size_t colon = hp.rfind(':');
  uint32_t p = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(hp).substr(colon + 1), &p) ||
      p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", hp, "': expected HOST:PORT"));
  }
  *host = hp.substr(0, colon);
  *port = static_cast<uint16_t>(p);
  return absl::OkStatus();
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Create(
    ClusterNodeOptions options) {
  std::unique_ptr<ClusterNode> node(new ClusterNode());
  node->options_ = std::move(options);
  if (node->options_.num_shards == 0 ||
      node->options_.shard >= node->options_.num_shards) {
    return absl::InvalidArgumentError("shard must be < num_shards");
  }
  LATENTD_RETURN_IF_ERROR(node->Load());
  LATENTD_RETURN_IF_ERROR(node->StartServer());
  LATENTD_RETURN_IF_ERROR(node->Join());
  return node;
}

ClusterNode::~ClusterNode() { Stop(); }

absl::Status ClusterNode::Load() {
  const ClusterNodeOptions& o = options_;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<DocumentReader> reader,
                           OpenDocumentReader(o.corpus));
  std::vector<std::vector<std::string>> mine;
  absl::flat_hash_set<std::string> all_words;
  RawDocument doc;
  for (uint64_t i = 0; o.max_docs == 0 || i < o.max_docs; ++i) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&doc));
    if (!more) break;
    for (const std::string& w : doc.words) all_words.insert(w);
    if (i % o.num_shards == o.shard) mine.push_back(std::move(doc.words));
  }
  global_vocab_ = all_words.size();
  TokenStoreMeta meta;
  store_ = CreateInMemoryTokenStore(meta);
  CorpusBuilderOptions build;
  build.num_topics = o.num_topics;
  build.seed = o.seed * 1000003 + o.shard;
  std::unique_ptr<DocumentReader> shard_reader =
      NewInMemoryDocumentReader(std::move(mine));
  LATENTD_ASSIGN_OR_RETURN(BuiltCorpus built,
                           BuildCorpus(*shard_reader, build, store_.get()));
  tokens_ = built.stats.tokens;
  word_keys_.resize(built.vocab.size());
  for (WordId w = 0; w < built.vocab.size(); ++w) {
    word_keys_[w] = built.vocab.key(w);
  }
  table_ = std::make_unique<TopicTable>(built.vocab.size(), o.num_topics);
  LATENTD_RETURN_IF_ERROR(RebuildTable(store_.get(), table_.get()));
  synced_ = std::make_unique<SyncedTopicTable>(table_.get(), word_keys_);
  PipelineOptions po;
  po.threads = o.threads;
  pipeline_ = std::make_unique<SweepPipeline>(po, o.num_topics);
  pipeline_->SetCountUpdaterHook(
      [this](TopicTable*, std::span<const WordTopicDelta> applied) {
        synced_->MarkApplied(applied);
        const uint64_t every = kick_every_.load(std::memory_order_relaxed);
        if (every != 0 && ++batches_since_kick_ >= every && sync_) {
          batches_since_kick_ = 0;
          sync_->Kick();
        }
        return synced_->ApplyPending();
      });
  pipeline_->SetQuiesceMutex(synced_->layout_mutex());
  owner_ = std::make_unique<sync::OwnerShard>(o.num_topics);
  // Filled with the members once the ring is known; peers' progress may
  // arrive before that.
  clocks_ = std::make_unique<sync::ClockTable>(std::vector<std::string>{});
  const double a = o.alpha > 0 ? o.alpha : 50.0 / o.num_topics;
  alpha_.assign(o.num_topics, a);
  return absl::OkStatus();
}

absl::Status ClusterNode::StartServer() {
  std::string host;
  uint16_t port = 0;
  LATENTD_RETURN_IF_ERROR(SplitHostPort(options_.listen, &host, &port));
  loop_ = std::make_unique<sync::EventLoop>(1);
  sync::ServerOptions so;
  so.host = host;
  so.port = port;
  so.log = options_.log;
  LATENTD_ASSIGN_OR_RETURN(
      server_, sync::Server::Start(loop_.get(), so,
                                   [this](sync::Frame f, sync::Responder r) {
                                     HandleFrame(std::move(f), std::move(r));
                                   }));
  address_ = absl::StrCat(host, ":", server_->port());
  node_id_ = options_.node_id.empty() ? address_ : options_.node_id;
  return absl::OkStatus();
}

void ClusterNode::HandleFrame(sync::Frame request, sync::Responder responder) {
  switch (request.type) {
    case sync::MESSAGE_TYPE_DELTA_BATCH: {
      sync::DeltaBatch batch;
      if (!batch.ParseFromString(request.payload)) {
        responder.Reply(absl::InvalidArgumentError("unparsable DeltaBatch"));
        return;
      }
      sync::DeltaReply reply;
      absl::Status s = owner_->Apply(batch, &reply);
      if (!s.ok()) {
        options_.log(absl::StrCat("rejected delta batch from ", batch.node_id(),
                                  ": ", s.ToString()));
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
      clocks_->Update(p.node_id(), p.clock(), p.finished());
      if (p.ready()) clocks_->MarkReady(p.node_id());
      responder.Reply(sync::ProgressReply().SerializeAsString());
      return;
    }
    default:
      responder.Reply(absl::UnimplementedError(
          absl::StrCat("unknown message type ", request.type)));
  }
}

absl::Status ClusterNode::Join() {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           sync::RedisClient::Connect(options_.redis_url));
  sync::MembershipOptions mo;
  mo.cluster = options_.cluster;
  mo.node_id = node_id_;
  mo.address = address_;
  mo.expected_members = options_.expected_members;
  mo.wait_timeout = options_.join_timeout;
  LATENTD_ASSIGN_OR_RETURN(ring_config_, sync::JoinCluster(redis.get(), mo));
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(ring_config_));
  std::vector<std::string> ids;
  std::vector<std::unique_ptr<sync::OwnerChannel>> channels;
  for (const hashring::Member& m : ring_config_.members) {
    ids.push_back(m.id);
    if (m.id == node_id_) {
      channels.push_back(sync::MakeLocalChannel(owner_.get()));
      continue;
    }
    auto peer = std::make_unique<Peer>();
    peer->id = m.id;
    sync::ClientOptions co;
    LATENTD_RETURN_IF_ERROR(SplitHostPort(m.address, &co.host, &co.port));
    co.log = options_.log;
    peer->client = std::make_unique<sync::Client>(loop_.get(), co);
    channels.push_back(
        sync::MakeRemoteChannel(peer->client.get(), options_.call_timeout));
    peers_.push_back(std::move(peer));
  }
  for (const std::string& id : ids) clocks_->Add(id);
  std::vector<uint32_t> key_owner(synced_->num_keys());
  for (size_t i = 0; i < key_owner.size(); ++i) {
    key_owner[i] = ring->Owner(synced_->key(i));
  }
  sync::SynchronizerOptions so;
  so.node_id = node_id_;
  so.incarnation =
      std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  so.round_byte_budget = options_.round_byte_budget;
  so.round_interval = options_.round_interval;
  so.min_key_weight = options_.min_key_weight;
  so.log = options_.log;
  sync_ = std::make_unique<sync::Synchronizer>(
      so, synced_.get(), std::move(key_owner), std::move(channels));
  sync_->Start();
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  // Start from the same global state everywhere: push the initial counts,
  // wait until every node has, pull theirs. (Nodes that sample from their
  // own counts alone first drift apart, topic labels and all, and take
  // many sweeps to agree again.)
  sync_->FullPass();
  ready_.store(true);
  clocks_->MarkReady(node_id_);
  {
    absl::MutexLock l(&hb_mu_);
    ++hb_kick_;
  }
  if (!clocks_->WaitAllReady(absl::Now() + options_.join_timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("cluster ", options_.cluster,
                     ": not every node pushed its initial state in time"));
  }
  sync_->FullPass();
  return synced_->ApplyPending();
}

void ClusterNode::HeartbeatLoop() {
  uint64_t seen_kick = 0;
  while (true) {
    {
      absl::MutexLock l(&hb_mu_);
      auto wake = [this, &seen_kick]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(hb_mu_) {
        return hb_stop_ || hb_kick_ != seen_kick;
      };
      hb_mu_.AwaitWithTimeout(absl::Condition(&wake), options_.heartbeat);
      if (hb_stop_) return;
      seen_kick = hb_kick_;
    }
    sync::Progress p;
    p.set_node_id(node_id_);
    p.set_clock(sweep_.load());
    p.set_finished(finished_.load());
    p.set_ready(ready_.load());
    const std::string payload = p.SerializeAsString();
    // Asynchronous, so a dead or slow peer never delays the others' beats.
    for (auto& peer : peers_) {
      Peer* pp = peer.get();
      {
        absl::MutexLock l(&pp->mu);
        if (pp->in_flight) continue;
        pp->in_flight = true;
      }
      pp->client->Call(sync::MESSAGE_TYPE_PROGRESS, payload,
                       options_.call_timeout,
                       [this, pp](absl::StatusOr<sync::Frame> r) {
                         OnHeartbeatReply(pp, r.status());
                       });
    }
  }
}

void ClusterNode::OnHeartbeatReply(Peer* pp, const absl::Status& status) {
  absl::MutexLock l(&pp->mu);
  pp->in_flight = false;
  if (status.ok()) {
    pp->last_ok = absl::Now();
    if (pp->reported_down) {
      options_.log(absl::StrCat("peer ", pp->id, " reachable again"));
      pp->reported_down = false;
    }
  } else if (absl::Now() - pp->last_ok > options_.dead_after &&
             !pp->reported_down) {
    // Once dead, a peer no longer holds back SSP, even if it returns
    // (membership is fixed; its progress is still recorded).
    pp->reported_down = true;
    clocks_->MarkDead(pp->id);
    options_.log(absl::StrCat("peer ", pp->id, " unavailable (",
                              status.ToString(), "); going on without it"));
  }
}

bool ClusterNode::WaitAllFinished(absl::Duration timeout) {
  return clocks_->WaitAllFinished(absl::Now() + timeout);
}

std::vector<std::string> ClusterNode::UnavailablePeers() const {
  std::vector<std::string> out;
  for (const auto& p : peers_) {
    if (clocks_->IsDead(p->id)) out.push_back(p->id);
  }
  return out;
}

absl::StatusOr<NodeSweepReport> ClusterNode::Sweep() {
  if (!failed_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", node_id_,
        " stopped sampling after a failed sweep: ", failed_.message()));
  }
  absl::StatusOr<NodeSweepReport> report = SweepOnce();
  if (!report.ok()) failed_ = report.status();
  return report;
}

absl::StatusOr<NodeSweepReport> ClusterNode::SweepOnce() {
  NodeSweepReport report;
  const uint64_t t = sweep_.load() + 1;
  const auto wait_start = std::chrono::steady_clock::now();
  if (options_.consistency.bounded) {
    const uint64_t s = options_.consistency.staleness;
    if (t > s + 1) {
      // Every live node must have completed sweep t − 1 − s.
      while (!clocks_->WaitForMin(t - 1 - s,
                                  absl::Now() + absl::Milliseconds(50))) {
        LATENTD_RETURN_IF_ERROR(synced_->ApplyPending());
      }
      sync_->Flush();  // pull what they flushed
    }
  }
  LATENTD_RETURN_IF_ERROR(synced_->ApplyPending());
  report.wait_seconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - wait_start)
                            .count();
  if (options_.on_sweep_start) options_.on_sweep_start(node_id_, t);

  SweepParams params;
  params.table = table_.get();
  params.alpha = alpha_;
  params.beta = options_.beta;
  params.beta_sum = options_.beta * static_cast<double>(global_vocab_);
  params.seed = options_.seed * 7919 + options_.shard;
  params.sweep = t - 1;
  DocTopicStats stats(alpha_);
  const double cpu_start = ThreadCpuSeconds();
  LATENTD_ASSIGN_OR_RETURN(
      SweepResult result,
      pipeline_->Run(store_.get(), table_.get(), params, &stats));
  report.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  const auto flush_start = std::chrono::steady_clock::now();
  if (options_.consistency.bounded || options_.flush_each_sweep) {
    sync_->Flush();  // push this sweep
  } else {
    sync_->Kick(/*complete=*/true);
  }
  if (options_.rounds_per_sweep > 0) {
    kick_every_.store(std::max<uint64_t>(
        1, result.batches / static_cast<uint64_t>(options_.rounds_per_sweep)));
  }
  report.wait_seconds += std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - flush_start)
                             .count();
  if (options_.on_sweep_end) options_.on_sweep_end(node_id_, t);
  sweep_.store(t);
  sync_->set_clock(t);
  clocks_->Update(node_id_, t, false);
  {
    absl::MutexLock l(&hb_mu_);
    ++hb_kick_;
  }
  if (options_.slow_down > absl::ZeroDuration()) {
    absl::SleepFor(options_.slow_down);
  }
  report.sweep = t;
  report.tokens = result.tokens;
  report.seconds = result.seconds;
  report.doc_log_likelihood = stats.log_likelihood();
  return report;
}

void ClusterNode::Finish() {
  // Push what is left before saying so: once every node is finished, the
  // globals are final, and one pass pulls them.
  sync_->Flush();
  finished_.store(true);
  clocks_->Update(node_id_, sweep_.load(), true);
  absl::MutexLock l(&hb_mu_);
  ++hb_kick_;
}

sync::Synchronizer::PassResult ClusterNode::DrainPass() {
  sync::Synchronizer::PassResult r = sync_->FullPass();
  absl::Status s = synced_->ApplyPending();
  if (!s.ok()) {
    options_.log(s.ToString());
    r.quiet = false;
  }
  return r;
}

void ClusterNode::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    absl::MutexLock l(&hb_mu_);
    hb_stop_ = true;
  }
  if (heartbeat_.joinable()) heartbeat_.join();
  if (sync_) sync_->Stop();
  if (server_) server_->Stop();
  for (auto& p : peers_) p->client->Close();
}

double ClusterNode::OwnedWordLogLikelihood() const {
  const double beta = options_.beta;
  const double vbeta = beta * static_cast<double>(global_vocab_);
  const double lg_beta = std::lgamma(beta);
  double ll = 0;
  for (const auto& [key, g] : owner_->Snapshot()) {
    if (key == sync::kTopicTotalsKey) {
      // Topics with n_k = 0 contribute lnΓ(Vβ) − lnΓ(Vβ) = 0.
      for (const sync::SparseEntry& e : g) {
        ll += std::lgamma(vbeta) -
              std::lgamma(static_cast<double>(e.count) + vbeta);
      }
      continue;
    }
    for (const sync::SparseEntry& e : g) {
      ll += std::lgamma(static_cast<double>(e.count) + beta) - lg_beta;
    }
  }
  return ll;
}

}  // namespace latentd
