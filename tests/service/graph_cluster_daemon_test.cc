// Graph factorization across real latentd processes (issue 14, must-show 3
// and 4): Redis and 2 or 3 graph-only daemons on loopback, each given the
// same ca-HepTh training edges (10% held out by the test); each keeps the
// edges whose first endpoint the ring gives it and synchronizes its copies
// through the cluster's owners. The test collects every node's vectors
// (its checkpoint at --graph-max-epochs, checked against GetEmbedding),
// puts the whole-graph model together, and compares its objective and
// held-out AUC with a single-node run of the same trainer in this process:
//   - dual decomposition under bsp ends close to the single node (the
//     bounds below are what it reaches; the 1% is printed against),
//     its copies' distance to the consensus before each epoch's reset
//     falls, and after the final round every node's copy of a vertex is
//     the same z̄;
//   - the naive shared Z under async is measurably worse than dual on the
//     same setup (both printed);
//   - (issue 30, must-show 5) a cluster of 2 grows to 3 (add-node) and
//     loses one (kill -9, failover): after each change the nodes' edges
//     add up to the training graph's, once each, and the final model's
//     objective is within 1% of the single node's.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "corpora/edge_list.h"
#include "gtest/gtest.h"
#include "sampler/graph/graph_data.h"
#include "sampler/graph/graph_model.h"
#include "sampler/graph/graph_objective.h"
#include "sampler/graph/graph_trainer.h"
#include "service/api.pb.h"
#include "tests/data_dir.h"
#include "tests/sampler/graph/graph_test_util.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"

namespace latentd::testing {
namespace {

using service::Method;
using service::Protocol;

constexpr int kEpochs = 40;
constexpr uint32_t kDim = 16;
// Half of what one node trains at on ca-HepTh (0.55): the dual consensus's
// step scale (--graph-step-scale-max 2) lowers the rate at which a cluster
// diverges. At 0.3, 3 daemons diverged in about one run in thirty; at 0.25
// in none of 90 (SyncedEmbeddings::StepScale).
constexpr double kLearningRate = 0.25;

GraphTrainerOptions TrainerOptions() {
  GraphTrainerOptions o;  // 5 negatives, λ = 1, η = 0.1, seed 1
  o.dim = kDim;
  o.learning_rate = kLearningRate;
  return o;
}

struct Result {
  double objective = 0, auc = 0;
  double first_distance = 0, last_distance = 0;  // dual only
  double copies_disagree = 0;  // largest |difference| between nodes' copies
};

// The real graph (ctest label data): skipped without it.
constexpr char kHepTh[] = "snap-ca-HepTh/CA-HepTh.txt.zst";

class GraphClusterDaemon : public ::testing::Test {
 protected:
  void SetUp() override { LATENTD_REQUIRE_DATA(kHepTh); }
  static void SetUpTestSuite() {
    if (!MissingRealData({kHepTh}).empty()) return;  // SetUp skips
    absl::StatusOr<EdgeList> list = ReadEdgeList(RealDataPath(kHepTh));
    ASSERT_TRUE(list.ok()) << list.status();
    absl::StatusOr<GraphData> graph = GraphData::FromEdgeList(*list);
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<LinkSplit> split = SplitHeldout(*graph, 0.1, 1);
    ASSERT_TRUE(split.ok()) << split.status();
    split_ = new LinkSplit(*std::move(split));
    dir_ = new TempDir();
    // The training edges, as every node is given them.
    edges_path_ = new std::string(dir_->path() + "/train.edges");
    std::ofstream out(*edges_path_);
    const std::vector<VertexKey>& keys = split_->train.keys();
    for (const GraphEdge& e : split_->train.edges()) {
      out << keys[e.src] << ' ' << keys[e.dst] << '\n';
    }
    out.close();
    ASSERT_TRUE(out.good());
    single_ = SingleNode(kEpochs);
  }
  // The single-node reference, same trainer and options.
  // (Computed once per number of epochs: the trainer is deterministic.)
  static Result SingleNode(int epochs) {
    static std::map<int, Result>* done = new std::map<int, Result>();
    if (auto it = done->find(epochs); it != done->end()) return it->second;
    Result& single = (*done)[epochs];
    auto trainer = GraphTrainer::Create(split_->train, TrainerOptions());
    EXPECT_TRUE(trainer.ok()) << trainer.status();
    if (!trainer.ok()) return single;
    for (int e = 0; e < epochs; ++e) EXPECT_TRUE((*trainer)->RunEpoch().ok());
    single.objective = Objective((*trainer)->embeddings());
    single.auc = Auc((*trainer)->embeddings());
    std::printf("single node, %d epochs, d=%u: objective %.1f, AUC %.4f\n",
                epochs, kDim, single.objective, single.auc);
    return single;
  }
  static void TearDownTestSuite() {
    delete split_;
    delete edges_path_;
    delete dir_;
  }

  static double Objective(std::span<const float> z) {
    const GraphTrainerOptions o = TrainerOptions();
    static const ObjectiveEvaluator* evaluator =
        new ObjectiveEvaluator(split_->train, o.negatives, o.seed);
    return evaluator->Evaluate(z, o.dim, o.negative_dims, o.lambda).total();
  }
  static double Auc(std::span<const float> z) {
    return EmbeddingAuc(*split_, z, kDim);
  }

  // A graph node's flags: the training edges, the trainer's options,
  // `epochs`, `consensus` and `consistency` (null: the default, auto).
  static std::vector<std::string> GraphArgs(int epochs, const char* consensus,
                                            const char* consistency) {
    std::vector<std::string> args = {"--graph-edges",
                                     *edges_path_,
                                     "--graph-dim",
                                     absl::StrCat(kDim),
                                     "--graph-max-epochs",
                                     absl::StrCat(epochs),
                                     "--graph-checkpoint-every",
                                     "0",
                                     "--graph-learning-rate",
                                     absl::StrCat(kLearningRate),
                                     "--graph-consensus",
                                     consensus};
    if (consistency != nullptr) {
      args.push_back("--consistency");
      args.push_back(consistency);
    }
    return args;
  }

  // Puts the nodes' models together into *result: a vertex from the first
  // node holding it, how far the other holders' copies are from it, the
  // objective and AUC of the whole; fails the test if a vertex is held by
  // none. A vertex the training graph lacks (one of ingested edges) fails
  // the test too unless `ingested` is given: it counts them there.
  static void Combine(const std::vector<GraphModel>& models, Result* result,
                      size_t* ingested = nullptr) {
    const GraphData& g = split_->train;
    std::vector<float> z(g.num_vertices() * kDim, 0.0f);
    std::vector<bool> seen(g.num_vertices(), false);
    for (const GraphModel& m : models) {
      for (size_t i = 0; i < m.num_vertices(); ++i) {
        std::optional<VertexId> v = g.Find(m.keys()[i]);
        if (!v && ingested != nullptr) {
          ++*ingested;
          continue;
        }
        EXPECT_TRUE(v.has_value());
        if (!v) continue;
        const float* row = &m.vectors()[i * kDim];
        float* into = &z[size_t{*v} * kDim];
        for (uint32_t k = 0; k < kDim; ++k) {
          if (seen[*v]) {
            result->copies_disagree = std::max<double>(
                result->copies_disagree, std::abs(into[k] - row[k]));
          } else {
            into[k] = row[k];
          }
        }
        seen[*v] = true;
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), false), 0)
        << "vertices no node holds";
    result->objective = Objective(z);
    result->auc = Auc(z);
  }

  // Status of daemon `d` (a test failure if the call fails).
  static api::StatusResponse GraphStatusOf(Daemon* d) {
    api::StatusResponse r;
    auto api = d->Client(Protocol::kTcp);
    absl::Status s = api->Call(Method::kStatus, api::StatusRequest(), &r);
    EXPECT_TRUE(s.ok()) << s;
    return r;
  }

  // Waits (up to 30 s) until `nodes` are past `epoch`, see a ring of
  // `members`, and their training edges add up to `edges` (each edge on
  // one node); their edges, in order (a test failure if that never came).
  static std::vector<uint64_t> AwaitShares(TestCluster& cluster,
                                           const std::vector<Daemon*>& nodes,
                                           uint64_t epoch, int members,
                                           uint64_t edges) {
    std::vector<uint64_t> each;
    for (int i = 0; i < 600; ++i) {
      each.clear();
      uint64_t sum = 0;
      bool ready = true;
      for (Daemon* d : nodes) {
        const api::StatusResponse r = GraphStatusOf(d);
        each.push_back(r.graph().edges());
        sum += r.graph().edges();
        ready &=
            r.graph().epoch() >= epoch && r.cluster_members_size() == members;
      }
      if (ready && sum == edges) return each;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "the nodes' edges did not come to " << edges
                  << " at epoch " << epoch << "\n"
                  << cluster.Logs();
    return each;
  }

  // Nodes `which` of `cluster` once they have trained `epochs` epochs and
  // checkpointed: their models (fewer, and a test failure, if one failed).
  static std::vector<GraphModel> FinalModels(TestCluster& cluster,
                                             const std::vector<int>& which,
                                             int epochs) {
    std::vector<GraphModel> models;
    for (int i : which) {
      auto api = cluster.node(i)->Client(Protocol::kTcp);
      absl::StatusOr<api::StatusResponse> s = WaitStatus(
          api.get(),
          [epochs](const api::StatusResponse& r) {
            const uint64_t e = static_cast<uint64_t>(epochs);
            return (r.graph().epoch() >= e && !r.graph().training() &&
                    r.graph().checkpoint_epoch() >= e) ||
                   !r.graph().error().empty();
          },
          180);
      EXPECT_TRUE(s.ok()) << s.status() << "\n" << cluster.Logs();
      if (!s.ok()) return models;
      EXPECT_TRUE(s->graph().error().empty()) << s->graph().error() << "\n"
                                              << cluster.Logs();
      absl::StatusOr<GraphModel> m =
          LoadNewestGraphModel(cluster.data_dir(i) + "/graph");
      EXPECT_TRUE(m.ok()) << m.status();
      if (!m.ok()) return models;
      models.push_back(*std::move(m));
    }
    return models;
  }

  // Prints `what`'s objective and AUC against the single node's, and
  // expects them within 1% and 0.01, every node's copy of a vertex the same.
  static void ExpectCloseToSingle(const char* what, const Result& r,
                                  const Result& single) {
    std::printf(
        "%s: objective %.1f (single %.1f, %+.2f%%), AUC %.4f (single %.4f); "
        "the nodes' copies differ by at most %.2g\n",
        what, r.objective, single.objective,
        100 * (r.objective / single.objective - 1), r.auc, single.auc,
        r.copies_disagree);
    EXPECT_LT(std::abs(r.objective / single.objective - 1), 0.01) << what;
    EXPECT_LT(std::abs(r.auc - single.auc), 0.01) << what;
    EXPECT_LT(r.copies_disagree, 1e-6) << what;
  }

  // Runs `nodes` daemons with `consensus` and `consistency` to kEpochs and
  // puts their vectors together.
  static Result RunCluster(int nodes, const char* consensus,
                           const char* consistency) {
    Result result;
    const std::string name = absl::StrCat("g", nodes, consensus);
    TempDir tmp;
    RedisServer redis(tmp.path());
    EXPECT_TRUE(redis.ok());
    if (!redis.ok()) return result;
    std::vector<std::unique_ptr<Daemon>> daemons;
    for (int i = 0; i < nodes; ++i) {
      std::vector<std::string> args =
          GraphArgs(kEpochs, consensus, consistency);
      for (std::string flag :
           {std::string("--cluster-redis"), redis.address(),
            std::string("--cluster"), name, std::string("--cluster-size"),
            absl::StrCat(nodes), std::string("--insecure"),
            std::string("on")}) {
        args.push_back(std::move(flag));
      }
      daemons.push_back(std::make_unique<Daemon>(
          absl::StrCat(tmp.path(), "/n", i), args, /*wait=*/false));
    }
    for (auto& d : daemons) {
      EXPECT_TRUE(d->WaitForPorts()) << d->Log();
      if (!d->ok()) return result;
    }
    // Each node's final vectors, from its checkpoint once it is done.
    std::vector<GraphModel> models;
    std::printf("%s/%s on %d daemons: edges per node", consensus, consistency,
                nodes);
    for (auto& d : daemons) {
      auto api = d->Client(Protocol::kTcp);
      absl::StatusOr<api::StatusResponse> s = WaitStatus(
          api.get(),
          [](const api::StatusResponse& r) {
            return (r.graph().epoch() >= kEpochs && !r.graph().training() &&
                    r.graph().checkpoint_epoch() >= kEpochs) ||
                   !r.graph().error().empty();
          },
          120);
      EXPECT_TRUE(s.ok()) << s.status() << "\n" << d->Log();
      if (!s.ok()) return result;
      if (!s->graph().error().empty()) {
        // The naive variant may diverge: the worst possible outcome.
        std::printf(" [node %s: %s]\n", d->tcp().c_str(),
                    s->graph().error().c_str());
        std::string logs;
        for (auto& node : daemons) absl::StrAppend(&logs, node->Log(), "\n");
        EXPECT_STREQ(consensus, "naive") << logs;
        result.objective = INFINITY;
        for (auto& other : daemons) other->Stop();
        return result;
      }
      std::printf(" %llu", (unsigned long long)s->graph().edges());
      EXPECT_EQ(s->graph().consensus(), consensus);
      if (std::string(consensus) == "dual") {
        result.first_distance += s->graph().first_consensus_distance() / nodes;
        result.last_distance += s->graph().consensus_distance() / nodes;
      }
      absl::StatusOr<GraphModel> m = LoadNewestGraphModel(
          absl::StrCat(tmp.path(), "/n", models.size(), "/graph"));
      EXPECT_TRUE(m.ok()) << m.status();
      if (!m.ok()) return result;
      // The API serves what the checkpoint holds.
      api::GetEmbeddingRequest req;
      req.set_vertex(m->keys()[0]);
      api::GetEmbeddingResponse resp;
      EXPECT_TRUE(api->Call(Method::kGetEmbedding, req, &resp).ok());
      EXPECT_EQ(resp.vector_size(), static_cast<int>(kDim));
      if (resp.vector_size() == static_cast<int>(kDim)) {
        for (uint32_t k = 0; k < kDim; ++k)
          EXPECT_EQ(resp.vector(k), m->vectors()[k]);
      }
      models.push_back(*std::move(m));
    }
    std::printf("\n");
    Combine(models, &result);
    std::printf(
        "  objective %.1f (single %.1f, %+.2f%%), AUC %.4f (single %.4f, "
        "%+.4f)",
        result.objective, single_.objective,
        100 * (result.objective / single_.objective - 1), result.auc,
        single_.auc, result.auc - single_.auc);
    if (std::string(consensus) == "dual") {
      std::printf(
          "; copies' mean distance to z̄ before the first epoch %.4f, before "
          "the final round %.4f; after it the nodes' copies differ by at "
          "most %.2g",
          result.first_distance, result.last_distance, result.copies_disagree);
    }
    std::printf("\n");
    for (auto& d : daemons) {
      EXPECT_EQ(d->Stop(), 0) << d->Log();
      // A final consensus that differs between nodes: say why.
      if (result.copies_disagree > 1e-4) std::printf("%s\n", d->Log().c_str());
    }
    return result;
  }

  static LinkSplit* split_;
  static TempDir* dir_;
  static std::string* edges_path_;
  static Result single_;
};

LinkSplit* GraphClusterDaemon::split_ = nullptr;
TempDir* GraphClusterDaemon::dir_ = nullptr;
std::string* GraphClusterDaemon::edges_path_ = nullptr;
Result GraphClusterDaemon::single_;

TEST_F(GraphClusterDaemon, DualMatchesSingleNodeAndNaiveIsWorse) {
  const Result dual2 = RunCluster(2, "dual", "bsp");
  const Result dual3 = RunCluster(3, "dual", "bsp");
  // The bound, 1%. Measured between daemons (kEpochs = 40,
  // η = 0.25, ADMM with the copies' steps scaled,
  // SyncedEmbeddings::StepScale): 2 nodes +0.23% to +0.28% (3 runs), 3
  // nodes +0.40% to +0.70% (90 runs).
  for (const auto& [nodes, r, bound] :
       {std::tuple{2, &dual2, 0.01}, std::tuple{3, &dual3, 0.01}}) {
    EXPECT_LT(std::abs(r->objective / single_.objective - 1), bound) << nodes;
    EXPECT_LT(std::abs(r->auc - single_.auc), 0.01) << nodes;
    EXPECT_LT(r->last_distance, 0.5 * r->first_distance) << nodes;
    // After the final round every copy is z̄, up to the 2^-24 fixed point
    // and float rounding (measured < 2e-8). It was off by up to 0.06 in
    // about one run in ten under load: a step the updater wrote while a
    // round read the row was never sent (SyncedEmbeddings::TakeChange
    // unlisted the key after reading it; graph_synced_embeddings_test
    // NoStepIsLostWhileRoundsTakeChangesConcurrently).
    EXPECT_LT(r->copies_disagree, 1e-6) << nodes;
  }
  const Result naive2 = RunCluster(2, "naive", "async");
  const Result naive3 = RunCluster(3, "naive", "async");
  std::printf(
      "dual/bsp against naive/async: 2 daemons objective %.1f vs %.1f, AUC "
      "%.4f vs %.4f; 3 daemons objective %.1f vs %.1f, AUC %.4f vs %.4f\n",
      dual2.objective, naive2.objective, dual2.auc, naive2.auc, dual3.objective,
      naive3.objective, dual3.auc, naive3.auc);
  // The naive sum of stale steps overshoots: worse on 2 nodes, by far on 3
  // (measured 9-18% above dual, or diverged).
  EXPECT_GT(naive2.objective, dual2.objective);
  EXPECT_GT(naive3.objective, 1.05 * dual3.objective);
}

// Issue 30, must-show 5: ring changes in a graph cluster. Two nodes train
// (dual, bsp); a third started with --cluster-join is admitted with
// `latentctl cluster add-node` while they train, and every node keeps the
// edges the new ring gives it (their edges add up to the training graph's
// at every ring epoch, so no edge is trained twice or dropped); then one
// of the first two is killed with SIGKILL, the two left fail it over and
// take its edges. The two survivors' final model is within 1% of the
// single node's objective, and their copies agree.
TEST_F(GraphClusterDaemon, GrowsFromTwoToThreeAndLosesOne) {
  // Long enough that both changes happen while the nodes train (an epoch
  // takes about 25 ms on two loaded cores).
  constexpr int kRingEpochs = 200;
  const Result single = SingleNode(kRingEpochs);
  TestCluster cluster({.name = "gring", .failure_timeout = "3"});
  ASSERT_TRUE(cluster.ok());
  // (The default consistency, auto: bsp for a graph-only node.)
  const std::vector<std::string> args = GraphArgs(kRingEpochs, "dual", nullptr);
  ASSERT_TRUE(cluster.Start(2, args));
  const size_t total_edges = split_->train.num_edges();
  auto settled = [&](const std::vector<Daemon*>& nodes, uint64_t epoch,
                     int members) {
    return AwaitShares(cluster, nodes, epoch, members, total_edges);
  };
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  std::vector<uint64_t> edges = settled({a, b}, 20, 2);
  EXPECT_NE(a->Log().find("members, ssp:0, dual decomposition"),
            std::string::npos)
      << "a graph-only node runs bsp by default\n"
      << a->Log();
  std::printf("2 nodes: edges %llu + %llu\n", (unsigned long long)edges[0],
              (unsigned long long)edges[1]);

  Daemon* c = cluster.StartJoiner(args);
  const std::string pending = PendingNode(cluster.redis().address(), "gring");
  ASSERT_FALSE(pending.empty()) << c->Log();
  auto [rc, out] = Latentctl({"cluster", "add-node", pending, "--cluster-redis",
                              cluster.redis().address(), "--cluster", "gring"});
  ASSERT_EQ(rc, 0) << out << cluster.Logs();
  ASSERT_TRUE(c->WaitForPorts()) << c->Log();
  const uint64_t joined_at = GraphStatusOf(a).graph().epoch();
  ASSERT_LT(joined_at + 40, uint64_t{kRingEpochs})
      << "the cluster must still be training";
  edges = settled({a, b, c}, joined_at + 10, 3);
  std::printf("3 nodes (joined at epoch %llu): edges %llu + %llu + %llu\n",
              (unsigned long long)joined_at, (unsigned long long)edges[0],
              (unsigned long long)edges[1], (unsigned long long)edges[2]);
  for (uint64_t e : edges) EXPECT_GT(e, 0u);
  // The joiner started at the cluster's epoch, not at 0.
  EXPECT_GE(GraphStatusOf(c).graph().epoch(), joined_at);

  const uint64_t killed_at = GraphStatusOf(b).graph().epoch();
  ASSERT_LT(killed_at + 40, uint64_t{kRingEpochs})
      << "the cluster must still be training";
  a->Stop(SIGKILL);
  edges = settled({b, c}, killed_at + 10, 2);
  std::printf("a killed at epoch %llu: edges %llu + %llu\n",
              (unsigned long long)killed_at, (unsigned long long)edges[0],
              (unsigned long long)edges[1]);

  std::vector<GraphModel> models = FinalModels(cluster, {1, 2}, kRingEpochs);
  ASSERT_EQ(models.size(), 2u);
  Result r;
  Combine(models, &r);
  ExpectCloseToSingle("grown and failed over", r, single);
  for (int i : {1, 2}) {
    EXPECT_EQ(cluster.node(i)->Stop(), 0) << cluster.node(i)->Log();
  }
}

// Shrinking and restarting a graph cluster (issue 30): three nodes train;
// edges among new vertices are ingested (each acknowledged by its first
// endpoint's owner); `latentctl cluster remove-node` removes the node that
// acknowledged the most, which hands them to the others and exits; then
// one of the two left is killed with SIGKILL and started again with its
// command line, and returns. At each step the nodes' edges add up to the
// training graph's plus the ingested ones, and the final model is within
// 1% of the single node's objective.
TEST_F(GraphClusterDaemon, ShrinksWithHandoffAndARestartedNodeReturns) {
  constexpr int kRingEpochs = 200;
  constexpr VertexKey kNewBase = 1000000000000000;  // above every vertex id
  constexpr int kIngested = 30;
  const Result single = SingleNode(kRingEpochs);
  TestCluster cluster({.name = "gshrink", .failure_timeout = "3"});
  ASSERT_TRUE(cluster.ok());
  std::vector<std::vector<std::string>> node_args;
  for (int i = 0; i < 3; ++i) {
    node_args.push_back(GraphArgs(kRingEpochs, "dual", nullptr));
    // (The node id is its --listen address: fixed, so a restart returns.)
    for (std::string& f : FixedPortArgs({"--listen", "--cluster-listen"})) {
      node_args.back().push_back(std::move(f));
    }
  }
  ASSERT_TRUE(cluster.Start(node_args));
  const uint64_t graph_edges = split_->train.num_edges();
  AwaitShares(cluster, cluster.nodes(), 20, 3, graph_edges);

  api::IngestEdgesRequest request;
  for (int i = 0; i < kIngested; ++i) {
    api::GraphEdge* e = request.add_edges();
    e->set_src(kNewBase + i);
    e->set_dst(kNewBase + i + 1);
  }
  api::IngestEdgesResponse acked;
  auto api = cluster.node(0)->Client(Protocol::kTcp);
  ASSERT_TRUE(api->Call(Method::kIngestEdges, request, &acked).ok());
  ASSERT_EQ(acked.accepted(), static_cast<uint64_t>(kIngested));
  const uint64_t all_edges = graph_edges + kIngested;
  AwaitShares(cluster, cluster.nodes(), 25, 3, all_edges);

  // The node that acknowledged the most leaves, handing them off.
  int leaver = 0;
  uint64_t most = 0;
  for (int i = 0; i < 3; ++i) {
    const uint64_t n = GraphStatusOf(cluster.node(i)).graph().ingested_edges();
    if (n > most) most = n, leaver = i;
  }
  ASSERT_GT(most, 0u);
  const uint64_t removed_at =
      GraphStatusOf(cluster.node(leaver)).graph().epoch();
  ASSERT_LT(removed_at + 60, uint64_t{kRingEpochs});
  auto [rc, out] = Latentctl(
      {"cluster", "remove-node", cluster.node(leaver)->tcp(), "--cluster-redis",
       cluster.redis().address(), "--cluster", "gshrink"});
  ASSERT_EQ(rc, 0) << out << cluster.Logs();
  std::vector<int> staying;
  for (int i = 0; i < 3; ++i) {
    if (i != leaver) staying.push_back(i);
  }
  int exit_status = -1;
  for (int i = 0; i < 600 && !cluster.node(leaver)->Exited(&exit_status); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(exit_status, 0) << "the removed node exits by itself\n"
                            << cluster.node(leaver)->Log();
  std::vector<uint64_t> edges =
      AwaitShares(cluster, {cluster.node(staying[0]), cluster.node(staying[1])},
                  removed_at + 5, 2, all_edges);
  std::printf(
      "node %d removed at epoch %llu (%llu edges acknowledged there "
      "handed off): edges %llu + %llu\n",
      leaver, (unsigned long long)removed_at, (unsigned long long)most,
      (unsigned long long)edges[0], (unsigned long long)edges[1]);

  // One of the two killed and started again with its command line.
  const int restarted = staying[0];
  const uint64_t killed_at =
      GraphStatusOf(cluster.node(staying[1])).graph().epoch();
  ASSERT_LT(killed_at + 30, uint64_t{kRingEpochs});
  cluster.node(restarted)->Stop(SIGKILL);
  ASSERT_NE(cluster.Restart(restarted), nullptr);
  ASSERT_TRUE(cluster.node(restarted)->ok()) << cluster.node(restarted)->Log();
  edges =
      AwaitShares(cluster, {cluster.node(staying[0]), cluster.node(staying[1])},
                  killed_at + 5, 2, all_edges);
  std::printf(
      "node %d killed at epoch %llu and restarted: edges %llu + "
      "%llu\n",
      restarted, (unsigned long long)killed_at, (unsigned long long)edges[0],
      (unsigned long long)edges[1]);

  std::vector<GraphModel> models = FinalModels(cluster, staying, kRingEpochs);
  ASSERT_EQ(models.size(), 2u);
  Result r;
  size_t new_vertices = 0;
  Combine(models, &r, &new_vertices);
  // The ingested chain's vertices, each held by at least one node.
  EXPECT_GE(new_vertices, size_t{kIngested + 1});
  ExpectCloseToSingle("shrunk and restarted", r, single);
  for (int i : staying) {
    EXPECT_EQ(cluster.node(i)->Stop(), 0) << cluster.node(i)->Log();
  }
}

}  // namespace
}  // namespace latentd::testing
