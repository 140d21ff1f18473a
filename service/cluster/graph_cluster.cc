#include "service/cluster/graph_cluster.h"

#include <chrono>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hashring/ring.h"
#include "sampler/graph/graph_objective.h"
#include "sampler/graph/synced_embeddings.h"
#include "sync/owner_shard.h"
#include "sync/synchronizer.h"

namespace latentd {
namespace {

struct Node {
  std::unique_ptr<GraphTrainer> trainer;
  std::unique_ptr<SyncedEmbeddings> table;
  std::unique_ptr<sync::OwnerShard> shard;
  std::unique_ptr<sync::Synchronizer> synchronizer;
};

bool IsDual(GraphConsensusVariant v) {
  return v == GraphConsensusVariant::kDualSync ||
         v == GraphConsensusVariant::kDualAsync;
}
bool IsSync(GraphConsensusVariant v) {
  return v == GraphConsensusVariant::kDualSync ||
         v == GraphConsensusVariant::kNaiveSync;
}

}  // namespace

absl::StatusOr<GraphConsensusVariant> ParseGraphConsensusVariant(
    const std::string& name) {
  for (GraphConsensusVariant v :
       {GraphConsensusVariant::kDualSync, GraphConsensusVariant::kDualAsync,
        GraphConsensusVariant::kNaiveSync,
        GraphConsensusVariant::kNaiveAsync}) {
    if (name == GraphConsensusVariantName(v)) return v;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "consensus variant '", name,
      "' is not dual-sync, dual-async, naive-sync or naive-async"));
}

const char* GraphConsensusVariantName(GraphConsensusVariant v) {
  switch (v) {
    case GraphConsensusVariant::kDualSync:
      return "dual-sync";
    case GraphConsensusVariant::kDualAsync:
      return "dual-async";
    case GraphConsensusVariant::kNaiveSync:
      return "naive-sync";
    case GraphConsensusVariant::kNaiveAsync:
      return "naive-async";
  }
  return "?";
}

struct GraphCluster::Impl {
  Impl(const GraphData& g, const GraphClusterOptions& o)
      : graph(g),
        options(o),
        evaluator(g, o.trainer.negatives, o.trainer.seed) {}
  GraphData graph;
  GraphClusterOptions options;
  ObjectiveEvaluator evaluator;
  std::vector<Node> nodes;
  std::vector<int> first_holder;   // vertex -> a node holding it
  std::vector<uint32_t> owner_of;  // vertex -> owner node
  uint64_t epoch = 0;

  // Takes each node's z̄ as target (and its λ and μ weights); returns the
  // mean copy-to-consensus distance before any reset.
  double RefreshConsensus() {
    double distance = 0;
    for (Node& n : nodes) {
      distance += n.table->RefreshConsensus(options.reset_to_consensus);
    }
    return distance / nodes.size();
  }
};

GraphCluster::GraphCluster(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

GraphCluster::~GraphCluster() {
  for (Node& n : impl_->nodes) {
    if (n.synchronizer) n.synchronizer->Stop();
  }
}

absl::StatusOr<std::unique_ptr<GraphCluster>> GraphCluster::Start(
    const GraphData& graph, const GraphClusterOptions& options) {
  if (options.nodes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("nodes ", options.nodes, " is not >= 1"));
  }
  if (IsDual(options.variant) && !(options.trainer.mu > 0)) {
    return absl::InvalidArgumentError(
        "the dual variants need a consensus strength mu > 0");
  }
  LATENTD_RETURN_IF_ERROR(options.trainer.Validate());
  if (graph.num_edges() == 0) {
    return absl::InvalidArgumentError("the graph has no edges to train on");
  }
  auto impl = std::make_unique<Impl>(graph, options);
  const int m = options.nodes;
  hashring::RingConfig config;
  for (int i = 0; i < m; ++i)
    config.members.push_back({absl::StrCat("node", i), "", 1});
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(config));
  const size_t n = graph.num_vertices();
  impl->owner_of.resize(n);
  for (size_t v = 0; v < n; ++v) {
    impl->owner_of[v] = ring->Owner(VertexSyncKey(graph.keys()[v]));
  }
  std::vector<std::vector<GraphEdge>> parts(m);
  for (const GraphEdge& e : graph.edges())
    parts[impl->owner_of[e.src]].push_back(e);
  impl->first_holder.assign(n, -1);
  for (int i = m - 1; i >= 0; --i) {
    for (const GraphEdge& e : parts[i]) {
      impl->first_holder[e.src] = i;
      impl->first_holder[e.dst] = i;
    }
  }
  const ConsensusMode mode =
      IsDual(options.variant) ? ConsensusMode::kDual : ConsensusMode::kNaive;
  impl->nodes.resize(m);
  for (int i = 0; i < m; ++i) {
    if (parts[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node", i, " owns no edge: too few edges for ", m, " nodes"));
    }
    Node& node = impl->nodes[i];
    GraphTrainerOptions t = options.trainer;
    if (!IsDual(options.variant)) t.mu = 0;
    LATENTD_ASSIGN_OR_RETURN(
        node.trainer, GraphTrainer::Create(graph.WithEdges(parts[i]), t));
    node.table = std::make_unique<SyncedEmbeddings>(node.trainer.get(), mode,
                                                    options.max_step_scale);
    node.trainer->SetUpdaterHook(node.table->Hook());
    node.shard = std::make_unique<sync::OwnerShard>(node.table->dimension());
  }
  std::mt19937_64 random(std::random_device{}());
  for (int i = 0; i < m; ++i) {
    Node& node = impl->nodes[i];
    std::vector<std::unique_ptr<sync::OwnerChannel>> channels;
    for (int j = 0; j < m; ++j) {
      channels.push_back(sync::MakeLocalChannel(
          impl->nodes[j].shard.get(), absl::StrCat("node", j),
          j == i ? sync::OwnerShard::Origin::kThisProcess
                 : sync::OwnerShard::Origin::kPeer));
    }
    std::vector<uint32_t> key_owner(node.table->num_keys());
    for (size_t k = 0; k < key_owner.size(); ++k) {
      key_owner[k] = ring->Owner(node.table->key(k));
    }
    sync::SynchronizerOptions so;
    so.node_id = absl::StrCat("node", i);
    so.incarnation = random();
    so.round_interval =
        IsSync(options.variant) ? absl::Hours(1) : options.round_interval;
    so.log = [](std::string_view) {};
    node.synchronizer = std::make_unique<sync::Synchronizer>(
        so, node.table.get(), std::move(key_owner), std::move(channels));
    node.synchronizer->Start();
  }
  std::unique_ptr<GraphCluster> cluster(new GraphCluster(std::move(impl)));
  // Every copy starts at the same point (seeded by the vertex key): the
  // first round tells the owners, so z̄ is known before the first epoch.
  LATENTD_RETURN_IF_ERROR(cluster->Quiesce());
  if (IsDual(options.variant)) cluster->impl_->RefreshConsensus();
  return cluster;
}

absl::Status GraphCluster::Quiesce() {
  for (int pass = 0; pass < 2; ++pass) {
    for (Node& n : impl_->nodes) {
      sync::Synchronizer::PassResult r = n.synchronizer->Flush();
      if (!r.unavailable.empty()) {
        return absl::UnavailableError(absl::StrCat(
            "consensus round: owner ", r.unavailable.front(), " unavailable"));
      }
    }
  }
  for (Node& n : impl_->nodes) n.table->ApplyPending();
  return absl::OkStatus();
}

absl::StatusOr<GraphClusterEpoch> GraphCluster::RunEpoch() {
  Impl& m = *impl_;
  const auto start = std::chrono::steady_clock::now();
  std::vector<absl::Status> status(m.nodes.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    threads.emplace_back([&m, &status, i] {
      status[i] = m.nodes[i].trainer->RunEpoch().status();
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < status.size(); ++i) {
    if (!status[i].ok()) {
      return absl::Status(status[i].code(),
                          absl::StrCat("node", i, ": ", status[i].message()));
    }
  }
  if (IsSync(m.options.variant)) {
    LATENTD_RETURN_IF_ERROR(Quiesce());
  } else {
    for (Node& n : m.nodes) n.synchronizer->Kick();
  }
  GraphClusterEpoch out;
  out.epoch = ++m.epoch;
  if (IsDual(m.options.variant)) {
    out.consensus_distance = m.RefreshConsensus();
  }
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  out.objective = Objective();
  return out;
}

std::vector<float> GraphCluster::Embeddings() const {
  const Impl& m = *impl_;
  const uint32_t d = m.options.trainer.dim;
  const size_t n = m.graph.num_vertices();
  std::vector<float> z(n * d, 0.0f);
  for (size_t v = 0; v < n; ++v) {
    if (m.first_holder[v] < 0) continue;  // no edge at all
    if (IsDual(m.options.variant)) {
      const sync::SparseVector g = m.nodes[m.owner_of[v]].shard->Global(
          VertexSyncKey(m.graph.keys()[v]));
      int64_t weight = 0;  // Σ_m w_i^(m), the vertex's degree
      for (const sync::SparseEntry& e : g) {
        if (e.topic == d + 1) weight = e.count;
      }
      if (weight > 0) {
        for (const sync::SparseEntry& e : g) {
          if (e.topic < d) {
            z[v * d + e.topic] =
                static_cast<float>(e.count / SyncedEmbeddings::kScale / weight);
          }
        }
        continue;
      }
    }
    m.nodes[m.first_holder[v]].trainer->ReadRow(static_cast<VertexId>(v),
                                                &z[v * d]);
  }
  return z;
}

double GraphCluster::Objective() const {
  return impl_->evaluator
      .Evaluate(Embeddings(), impl_->options.trainer.dim,
                impl_->options.trainer.negative_dims,
                impl_->options.trainer.lambda)
      .total();
}

int GraphCluster::nodes() const {
  return static_cast<int>(impl_->nodes.size());
}

size_t GraphCluster::edges_on(int node) const {
  return impl_->nodes[node].trainer->graph().num_edges();
}

}  // namespace latentd
