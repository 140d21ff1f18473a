// GraphCluster: graph factorization across several nodes in one process
// (docs/design.md, "Graph consensus"): what the
// consensus tests and the graph benchmark run. Each node is a GraphTrainer
// on its share of the edges, a SyncedEmbeddings over its vectors, the
// OwnerShard of the vertex keys the ring gives it, and a Synchronizer with a
// channel to every node's shard (called directly: no sockets). An edge
// belongs to the ring owner of its first endpoint's key.
//
// Variants:
//   dual-sync   local epochs; after each, a consensus round (every node
//               flushes its copies' change to the owners, then hears the
//               others'), then each node pulls towards the new z̄ (μ).
//   dual-async  the same copies and owners, but the synchronizer's rounds
//               run in the background all the time (no barrier, no forced
//               round); each node takes the z̄ it knows after each epoch.
//   naive-sync  one shared Z: each node's epoch of SGD steps, computed
//               against Z as of the epoch's start, is summed into Z at the
//               end of the epoch (parameter-server SGD with one exchange
//               per epoch).
//   naive-async one shared Z, steps exchanged by the background rounds
//               and added as they arrive (staleness: one round).
//
// Thread-safety: not thread-safe; one thread drives a GraphCluster (each
// node trains on its own thread inside RunEpoch).
#ifndef LATENTD_SERVICE_CLUSTER_GRAPH_CLUSTER_H_
#define LATENTD_SERVICE_CLUSTER_GRAPH_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sampler/graph/graph_data.h"
#include "sampler/graph/graph_trainer.h"
#include "sampler/graph/synced_embeddings.h"

namespace latentd {

enum class GraphConsensusVariant {
  kDualSync,
  kDualAsync,
  kNaiveSync,
  kNaiveAsync
};

// "dual-sync", "dual-async", "naive-sync", "naive-async";
// kInvalidArgument otherwise.
absl::StatusOr<GraphConsensusVariant> ParseGraphConsensusVariant(
    const std::string& name);
const char* GraphConsensusVariantName(GraphConsensusVariant variant);

struct GraphClusterOptions {
  int nodes = 2;  // >= 1
  GraphConsensusVariant variant = GraphConsensusVariant::kDualSync;
  // Every node's trainer (threads each); mu is the consensus strength of
  // the dual variants (> 0 for them), ignored by the naive ones.
  GraphTrainerOptions trainer;
  // Dual: after each consensus round every copy is set to z̄ (then pulled
  // towards it with μ during the epoch); else it keeps its value.
  bool reset_to_consensus = false;
  // Dual: the cap on a copy's step scale (SyncedEmbeddings::StepScale);
  // 1 turns the scaling off.
  double max_step_scale = SyncedEmbeddings::kDefaultMaxStepScale;
  // The async variants' pause between background rounds.
  absl::Duration round_interval = absl::Milliseconds(5);
};

struct GraphClusterEpoch {
  uint64_t epoch = 0;
  // The objective (graph_objective.h) of Embeddings() on the whole graph
  // given to Start, with its fixed draw of negatives.
  double objective = 0;
  // Dual: mean over nodes and held vertices of ‖x_i^(m) − z̄_i‖ as each
  // node knows z̄; 0 for the naive variants.
  double consensus_distance = 0;
  double seconds = 0;  // the epoch and its consensus round, wall
};

class GraphCluster {
 public:
  // kInvalidArgument for bad options or an empty graph.
  static absl::StatusOr<std::unique_ptr<GraphCluster>> Start(
      const GraphData& graph, const GraphClusterOptions& options);
  ~GraphCluster();
  GraphCluster(const GraphCluster&) = delete;
  GraphCluster& operator=(const GraphCluster&) = delete;

  // One epoch on every node (in parallel), and the variant's exchange.
  absl::StatusOr<GraphClusterEpoch> RunEpoch();
  // Brings the cluster to quiescence: every node flushes (twice, so each
  // hears what the others sent), and the naive variants' received steps
  // are applied. Then every dual copy's z̄ is the owners'.
  absl::Status Quiesce();

  // The model for the whole graph (num_vertices × dim): dual: z̄_i from its
  // owner's sums; naive: Z as the node holding vertex i's first edge has it.
  std::vector<float> Embeddings() const;
  // The whole-graph objective of Embeddings().
  double Objective() const;
  int nodes() const;
  size_t edges_on(int node) const;

 private:
  struct Impl;
  explicit GraphCluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_GRAPH_CLUSTER_H_
