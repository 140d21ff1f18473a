// SyncedEmbeddings through the real Synchronizer and OwnerShards (direct
// channels): after a consensus round every node's z̄ is the edge-weighted
// mean of the copies, exactly up to the fixed-point rounding, with the
// holder count and weight at the owner; in naive mode every node ends with
// the start plus the sum of all nodes' steps; a node that holds more
// vertices after Rebind syncs them as new keys, pending until they know
// z̄; a vertex moved between nodes keeps its vector.
#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "sampler/graph/synced_embeddings.h"
#include "sync/owner_shard.h"
#include "sync/synchronizer.h"

namespace latentd {
namespace {

// Two nodes sharing vertex 1: node 0 has edges 0-1, 1-2 (vertex 1 degree
// 2 there), node 1 has edge 1-3 (degree 1).
GraphData Whole() {
  EdgeList list;
  list.edges = {{0, 1, 1.0f}, {1, 2, 1.0f}, {1, 3, 1.0f}};
  return *GraphData::FromEdgeList(list);
}

const std::string kIds[2] = {"n0", "n1"};

struct Pair {
  std::unique_ptr<GraphTrainer> trainer[2];
  std::unique_ptr<SyncedEmbeddings> table[2];
  std::unique_ptr<sync::OwnerShard> shard[2];
  std::unique_ptr<sync::Synchronizer> sync[2];

  explicit Pair(ConsensusMode mode) {
    const GraphData g = Whole();
    GraphTrainerOptions o;
    o.dim = 3;
    o.negatives = 0;
    trainer[0] =
        *GraphTrainer::Create(g.WithEdges({g.edges()[0], g.edges()[1]}), o);
    trainer[1] = *GraphTrainer::Create(g.WithEdges({g.edges()[2]}), o);
    for (int i = 0; i < 2; ++i) {
      table[i] = std::make_unique<SyncedEmbeddings>(trainer[i].get(), mode);
      trainer[i]->SetUpdaterHook(table[i]->Hook());
      shard[i] = std::make_unique<sync::OwnerShard>(table[i]->dimension());
    }
    for (int i = 0; i < 2; ++i) {
      std::vector<std::unique_ptr<sync::OwnerChannel>> ch;
      ch.push_back(sync::MakeLocalChannel(shard[0].get(), kIds[0]));
      ch.push_back(sync::MakeLocalChannel(shard[1].get(), kIds[1]));
      std::vector<uint32_t> owner(table[i]->num_keys());
      for (size_t k = 0; k < owner.size(); ++k) owner[k] = table[i]->key(k) % 2;
      sync::SynchronizerOptions so;
      so.node_id = kIds[i];
      so.incarnation = 100 + i;
      so.round_interval = absl::Hours(1);
      so.log = [](std::string_view) {};
      sync[i] = std::make_unique<sync::Synchronizer>(
          so, table[i].get(), std::move(owner), std::move(ch));
      sync[i]->Start();
    }
  }
  void Round() {
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < 2; ++i) sync[i]->Flush();
    }
    for (int i = 0; i < 2; ++i) table[i]->ApplyPending();
  }
  std::vector<float> Row(int node, VertexId v) {
    std::vector<float> r(3);
    trainer[node]->ReadRow(v, r.data());
    return r;
  }
};

TEST(SyncedEmbeddings, DualConsensusIsTheEdgeWeightedMeanOfTheCopies) {
  Pair p(ConsensusMode::kDual);
  // Make the copies of vertex 1 differ: train node 0 alone.
  ASSERT_TRUE(p.trainer[0]->RunEpoch().ok());
  p.Round();
  const VertexId v1 = *p.trainer[0]->graph().Find(1);
  const std::vector<float> a = p.Row(0, v1), b = p.Row(1, v1);
  ASSERT_NE(a, b);
  for (int node = 0; node < 2; ++node) {
    const std::vector<float> zbar = p.table[node]->Consensus();
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(zbar[v1 * 3 + k], (2 * a[k] + 1 * b[k]) / 3, 1e-6) << node;
    }
    const std::vector<float> ls = p.table[node]->LambdaScale();
    EXPECT_FLOAT_EQ(ls[v1], node == 0 ? 2.0f / 3 : 1.0f / 3);
    // Steps scaled by W / w, at most 2: 6 / 4 on node 0, 6 / 2 capped.
    const std::vector<float> steps = p.table[node]->StepScale();
    EXPECT_FLOAT_EQ(steps[v1], node == 0 ? 1.5f : 2.0f);
  }
  // Vertex 0 is node 0's alone: its consensus is its copy.
  const VertexId v0 = *p.trainer[0]->graph().Find(0);
  EXPECT_NEAR(p.table[0]->Consensus()[v0 * 3], p.Row(0, v0)[0], 1e-6);
  // The owner holds Σ w x, 2 holders, W = 6: with no negatives a copy's
  // weight is twice its edges (2 and 1 here).
  const sync::Key key = VertexSyncKey(1);
  const sync::SparseVector g = p.shard[key % 2]->Global(key);
  int64_t holders = 0, weight = 0;
  for (const sync::SparseEntry& e : g) {
    if (e.topic == 3) holders = e.count;
    if (e.topic == 4) weight = e.count;
  }
  EXPECT_EQ(holders, 2);
  EXPECT_EQ(weight, 6);
  EXPECT_GT(p.table[0]->ConsensusDistance(), 0.0);
}

// The owner's holders and weight W of vertex v (coordinates 3 and 4).
void AtOwner(Pair& p, VertexKey v, int64_t* holders, int64_t* weight) {
  const sync::Key key = VertexSyncKey(v);
  *holders = *weight = 0;
  for (const sync::SparseEntry& e : p.shard[key % 2]->Global(key)) {
    if (e.topic == 3) *holders = e.count;
    if (e.topic == 4) *weight = e.count;
  }
}

// Moves node i's table onto a trainer over `edges` of `g` (as GraphService
// does inside ClusterLink::GrowKeys).
void Rebind(Pair& p, int i, const GraphData& g,
            const std::vector<GraphEdge>& edges) {
  std::unique_ptr<GraphTrainer> next =
      *GraphTrainer::Create(g.WithEdges(edges), p.trainer[i]->options());
  ASSERT_TRUE(p.sync[i]
                  ->AddKeys([&] { return p.table[i]->Rebind(next.get()); },
                            [](sync::Key k) { return uint32_t(k % 2); })
                  .ok());
  next->SetUpdaterHook(p.table[i]->Hook());
  p.trainer[i] = std::move(next);
}

// Ingested edges (GraphService in cluster mode): each node rebuilds its
// trainer over more edges and moves its table onto it inside AddKeys.
// Node 0 gains 1-4 (vertex 4 new, vertex 1's degree there 3), node 1
// gains 3-0 (vertex 0 newly held there). A newly held vertex is pending:
// the owner counts its holder with no weight and sends it the others'
// sum, and its copy becomes z̄ (node 1's vertex 0) before it counts; one
// nobody else holds (vertex 4) counts from the second refresh after it was
// sent, with its own copy.
TEST(SyncedEmbeddings, RebindAddsNewlyHeldVerticesAsPendingKeys) {
  Pair p(ConsensusMode::kDual);
  p.Round();
  EdgeList list;
  list.edges = {
      {0, 1, 1.0f}, {1, 2, 1.0f}, {1, 3, 1.0f}, {3, 0, 1.0f}, {1, 4, 1.0f}};
  const GraphData g = *GraphData::FromEdgeList(list);
  const std::vector<GraphEdge>& e = g.edges();
  for (int i = 0; i < 2; ++i) {
    const size_t before = p.table[i]->num_keys();
    Rebind(p, i, g,
           i == 0 ? std::vector{e[0], e[1], e[4]} : std::vector{e[2], e[3]});
    EXPECT_EQ(p.table[i]->num_keys(), before + 1) << i;
    EXPECT_EQ(p.table[i]->state_counts().pending, 1u) << i;
  }
  // A graph that renumbers vertices is refused.
  EdgeList other;
  other.edges = {{9, 8, 1.0f}};
  std::unique_ptr<GraphTrainer> wrong = *GraphTrainer::Create(
      *GraphData::FromEdgeList(other), p.trainer[0]->options());
  EXPECT_EQ(p.table[0]->Rebind(wrong.get()).code(),
            absl::StatusCode::kFailedPrecondition);

  ASSERT_TRUE(p.trainer[0]->RunEpoch().ok());
  p.Round();
  int64_t holders = 0, weight = 0;
  AtOwner(p, 0, &holders, &weight);
  EXPECT_EQ(holders, 2);
  EXPECT_EQ(weight, 2 * 1);  // node 1's copy weighs nothing yet
  AtOwner(p, 1, &holders, &weight);
  EXPECT_EQ(weight, 2 * 4);  // weights: twice the edges (no negatives)
  AtOwner(p, 4, &holders, &weight);
  EXPECT_EQ(holders, 1);
  EXPECT_EQ(weight, 0);
  const VertexId v0 = *g.Find(0), v4 = *g.Find(4);
  const std::vector<float> a = p.Row(0, v0);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(p.table[1]->Consensus()[v0 * 3 + k], a[k], 1e-6);
  }
  p.table[1]->RefreshConsensus(/*reset=*/false);
  EXPECT_EQ(p.table[1]->state_counts().pending, 0u);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(p.Row(1, v0)[k], a[k], 1e-6);
  // Vertex 4: sent once, still pending after one refresh, active after two.
  const std::vector<float> own4 = p.Row(0, v4);
  p.table[0]->RefreshConsensus(/*reset=*/false);
  EXPECT_EQ(p.table[0]->state_counts().pending, 1u);
  p.table[0]->RefreshConsensus(/*reset=*/false);
  EXPECT_EQ(p.table[0]->state_counts().pending, 0u);
  EXPECT_EQ(p.Row(0, v4), own4);
  p.Round();
  AtOwner(p, 0, &holders, &weight);
  EXPECT_EQ(holders, 2);
  EXPECT_EQ(weight, 2 * 2);
  AtOwner(p, 4, &holders, &weight);
  EXPECT_EQ(holders, 1);
  EXPECT_EQ(weight, 2 * 1);
}

// A ring change moves edge 1-3 from node 1 to node 0 and 0-1 to node 1:
// vertex 3 leaves node 1 (releasing: its copy still counts until node 1's
// next refresh) and arrives at node 0 (pending). Node 0 takes node 1's
// copy of vertex 3 as its own before node 1's leaves the owner's sums: the
// vertex's vector survives the move, and afterwards the owner counts node
// 0 alone.
TEST(SyncedEmbeddings, AVertexMovedBetweenNodesKeepsItsVector) {
  Pair p(ConsensusMode::kDual);
  ASSERT_TRUE(p.trainer[1]->RunEpoch().ok());  // node 1's copy of 3 trained
  p.Round();
  const GraphData g = Whole();
  const std::vector<GraphEdge>& e = g.edges();
  const VertexId v3 = *g.Find(3);
  const std::vector<float> copy3 = p.Row(1, v3);
  Rebind(p, 0, g, {e[0], e[1], e[2]});
  Rebind(p, 1, g, {e[0]});
  EXPECT_EQ(p.table[0]->state_counts().pending, 1u);
  EXPECT_EQ(p.table[1]->state_counts().releasing, 1u);
  p.Round();
  int64_t holders = 0, weight = 0;
  AtOwner(p, 3, &holders, &weight);
  EXPECT_EQ(holders, 2);
  EXPECT_EQ(weight, 2);  // node 1's, releasing; node 0's pending
  for (int i = 0; i < 2; ++i) p.table[i]->RefreshConsensus(/*reset=*/true);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(p.Row(0, v3)[k], copy3[k], 1e-6);
  EXPECT_EQ(p.table[1]->state_counts().released, 1u);
  p.Round();
  AtOwner(p, 3, &holders, &weight);
  EXPECT_EQ(holders, 1);
  EXPECT_EQ(weight, 2);  // node 0's alone now
  // What node 1 still hears of vertex 3 is node 0's copy.
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(p.table[1]->Consensus()[v3 * 3 + k], copy3[k], 1e-6);
  }
}

TEST(SyncedEmbeddings, NaiveNodesEndWithTheSumOfEveryNodesSteps) {
  Pair p(ConsensusMode::kNaive);
  const VertexId v1 = *p.trainer[0]->graph().Find(1);
  const std::vector<float> start = p.Row(0, v1);
  ASSERT_EQ(start, p.Row(1, v1));  // the same seeded start on both
  ASSERT_TRUE(p.trainer[0]->RunEpoch().ok());
  const std::vector<float> after0 = p.Row(0, v1);
  ASSERT_TRUE(p.trainer[1]->RunEpoch().ok());
  const std::vector<float> after1 = p.Row(1, v1);
  p.Round();
  for (int k = 0; k < 3; ++k) {
    const float expected =
        start[k] + (after0[k] - start[k]) + (after1[k] - start[k]);
    EXPECT_NEAR(p.Row(0, v1)[k], expected, 1e-5);
    EXPECT_NEAR(p.Row(1, v1)[k], expected, 1e-5);
  }
}

// The writer updates rows while rounds take the changes (as the updater
// and the synchronizer's thread do): once the writer stops and the last
// listed keys are taken, what was taken of every key is its copy as it is
// now. A step written between a round's read of the row and its unlisting
// of the key used to be lost for good when it was the key's last (the key
// was still listed when the writer marked it, and unlisted after), so the
// nodes' final z̄ differed. Each trial ends the writer at another moment.
TEST(SyncedEmbeddings, NoStepIsLostWhileRoundsTakeChangesConcurrently) {
  constexpr uint32_t kDim = 256;
  EdgeList list;
  list.edges = {{0, 1, 1.0f}};
  GraphTrainerOptions o;
  o.dim = kDim;
  o.negatives = 0;
  auto trainer = *GraphTrainer::Create(*GraphData::FromEdgeList(list), o);
  SyncedEmbeddings table(trainer.get(), ConsensusMode::kDual);
  ASSERT_EQ(table.num_keys(), 2u);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> step(-0.01f, 0.01f);
  int lost = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::atomic<bool> started{false}, done{false};
    std::thread rounds([&table, &started, &done] {
      std::vector<uint32_t> dirty;
      sync::SparseVector delta;
      started.store(true);
      while (!done.load()) {
        dirty.clear();
        table.TakeDirtyList(&dirty);
        for (uint32_t i : dirty) table.TakeChange(i, &delta);
      }
    });
    while (!started.load()) std::this_thread::yield();
    const int steps = 100 + trial % 97;
    for (int n = 0; n < steps; ++n) {
      std::vector<float> s(kDim);
      for (float& x : s) x = step(rng);
      trainer->ApplyCorrection(0, s);
      table.MarkApplied(std::vector<VertexId>{0}, s);
    }
    done.store(true);
    rounds.join();
    std::vector<uint32_t> dirty;
    table.TakeDirtyList(&dirty);
    sync::SparseVector delta;
    for (uint32_t i : dirty) table.TakeChange(i, &delta);
    // Read: what was taken (no other node: nothing received). Vertex 0
    // has weight 2 (twice its one edge; no negatives).
    sync::SparseVector taken;
    table.Read(0, &taken);
    std::vector<int64_t> dense(kDim + 2, 0);
    for (const sync::SparseEntry& e : taken) dense[e.topic] = e.count;
    std::vector<float> row(kDim);
    trainer->ReadRow(0, row.data());
    for (uint32_t k = 0; k < kDim; ++k) {
      if (dense[k] !=
          std::llround(2 * double{row[k]} * SyncedEmbeddings::kScale)) {
        ++lost;
        break;
      }
    }
  }
  EXPECT_EQ(lost, 0) << "trials whose last steps were never taken";
}

}  // namespace
}  // namespace latentd
