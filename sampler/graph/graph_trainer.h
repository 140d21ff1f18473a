// GraphTrainer: graph factorization (Ahmed et al., WWW 2013) by SGD over
// the edges of one node, on the LDA sweep's pipeline shape (docs/design.md,
// "One node"), one oneTBB parallel_pipeline per epoch:
//
//   reader (serial, in order)  the next `batch_edges` edges of the epoch's
//                              seeded random permutation
//   workers (parallel)         per edge: its pair (y = 1) and `negatives`
//                              sampled pairs (y = 0); the batch's net
//                              gradient per vertex (graph_objective.h),
//                              read against the rows as they were when the
//                              batch first touched them, without locks
//   combiner (serial)          gradient -> step: −η_t · g, η_t = η / (1 +
//                              decay · epoch); refuses a non-finite step
//   updater (serial, in order) z_v += step: the only writer of the vectors
//                              (no Hogwild), then the updater hook
//
// With one thread and one batch in flight an epoch is strictly sequential,
// hence reproducible. Vectors start N(0, init_scale²), each drawn from the
// seed and the vertex's key, so that every node of a cluster starts a
// vertex's copy at the same point.
//
// Consensus (dual decomposition across nodes, sync/graph_consensus.h): with
// mu > 0 and a target set, each vertex is also pulled towards its target
// by (μ/2)‖z_i − t_i‖², spread over its touches like λ.
//
// Thread-safety: RunEpoch, SetConsensusTarget and the setters may not run
// concurrently with each other; Score, Objective and embeddings() may run
// while no epoch runs, or from the updater hook.
#ifndef LATENTD_SAMPLER_GRAPH_GRAPH_TRAINER_H_
#define LATENTD_SAMPLER_GRAPH_GRAPH_TRAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sampler/graph/graph_data.h"
#include "sampler/graph/graph_model.h"
#include "sampler/graph/graph_objective.h"

namespace latentd {

struct GraphTrainerOptions {
  uint32_t dim = 32;  // d, in [1, kMaxDim]
  // The signature (signature.h): how many of the d coordinates, the last
  // ones, count negatively in the score and the objective; in [0, dim).
  // 0 is the plain inner product.
  uint32_t negative_dims = 0;
  int negatives = 5;           // sampled non-edges per edge, [0, 1000]
  double lambda = 1.0;         // λ >= 0
  double mu = 0.0;             // consensus strength μ >= 0 (with a target)
  double learning_rate = 0.1;  // η > 0
  double learning_rate_decay = 0.05;  // η_t = η / (1 + decay · t), >= 0
  double init_scale = 0.1;  // standard deviation of the initial vectors
  uint64_t seed = 1;
  int threads = 1;              // pipeline workers, >= 1
  uint32_t batch_edges = 1024;  // edges per pipeline token, >= 1
  // Batches alive at once; 0 picks 2·threads + 1 (1 when threads == 1).
  int max_batches_in_flight = 0;
  // A diverged epoch is undone: RunEpoch keeps a copy of the vectors
  // (num_vertices × dim floats) from each epoch's start and puts it back.
  // Off where something else writes the vectors during an epoch and must
  // not be undone (the naive cluster's corrections).
  bool undo_diverged_epoch = false;

  static constexpr uint32_t kMaxDim = 4096;
  // kInvalidArgument naming the first setting out of range.
  absl::Status Validate() const;
};

struct EpochResult {
  uint64_t epoch = 0;       // epochs completed, this one included
  uint64_t edges = 0;       // edges visited
  uint64_t pairs = 0;       // pair terms (edges + negatives)
  double sampled_loss = 0;  // Σ pair terms as the workers saw them
  double learning_rate = 0;
  double seconds = 0;
};

class GraphTrainer {
 public:
  // Trains on `graph`'s edges (copied); vertices with no edge keep their
  // initial vectors. `initial` (num_vertices × dim), if not empty, replaces
  // the random start (a loaded model). kInvalidArgument for bad options,
  // an empty graph, or `initial` of the wrong size.
  static absl::StatusOr<std::unique_ptr<GraphTrainer>> Create(
      GraphData graph, const GraphTrainerOptions& options,
      std::vector<float> initial = {}, uint64_t start_epoch = 0);
  ~GraphTrainer();

  // The random start of vertex `key`'s vector (options.dim values into
  // out), the same on every node and in every run with the same seed.
  static void InitialRow(const GraphTrainerOptions& options, VertexKey key,
                         float* out);

  // One pass over the edges. kInternal if the steps diverged (a non-finite
  // value, or the epoch's sampled loss over 4 times what an all-zero model
  // would have lost on the same pairs: the learning rate is too high;
  // last_epoch_diverged() says so);
  // the vectors are then as the epoch found them with
  // options.undo_diverged_epoch, else as the last good batch left them.
  // A failed epoch does not count (epoch() stays).
  absl::StatusOr<EpochResult> RunEpoch();

  // The objective (graph_objective.h) on the training edges and a fixed
  // draw of negatives (without the consensus term).
  ObjectiveEvaluator::Value Objective() const;
  // The link score ⟨z_a, z_b⟩_s with the options' signature.
  double Score(VertexId a, VertexId b) const;

  // z (num_vertices × dim, row-major).
  std::span<const float> embeddings() const;
  const GraphData& graph() const;
  const GraphTrainerOptions& options() const;
  uint64_t epoch() const;
  // Whether the last RunEpoch failed because its steps diverged.
  bool last_epoch_diverged() const;
  // The learning rate η of the epochs to come (decayed as before).
  // REQUIRES: eta > 0 and finite; no epoch running.
  void SetLearningRate(double eta);

  // Sets the consensus target t (num_vertices × dim; copied) that the μ
  // term pulls towards; an empty span clears it.
  // REQUIRES: empty or num_vertices × dim values.
  void SetConsensusTarget(std::span<const float> target);

  // Scales λ and μ per vertex: vertex v's terms become lambda_scale[v] · λ
  // and mu_scale[v] · μ (a node of a cluster that holds a share of a
  // vertex's edges takes that share of its λ term, and a copy is pulled in
  // proportion to the edges it fits). Copied; empty = 1 for all.
  // REQUIRES: each empty or num_vertices values; no epoch running.
  void SetVertexScales(std::span<const float> lambda_scale,
                       std::span<const float> mu_scale,
                       std::span<const float> step_scale = {});
  // Copies row v into out[0..dim) with relaxed loads: safe from any thread
  // while an epoch runs (a row being updated may be seen in part).
  void ReadRow(VertexId v, float* out) const;

  // Called by the updater stage, after each batch's steps are applied, with
  // the batch's vertices and steps (|vertices| × dim). It runs as the
  // vectors' single writer: it may call ApplyCorrection. A non-OK status
  // fails the epoch. Set only while no epoch runs.
  using UpdaterHook = std::function<absl::Status(
      std::span<const VertexId> vertices, std::span<const float> steps)>;
  void SetUpdaterHook(UpdaterHook hook);
  // z_v += delta (dim values). REQUIRES: called from the updater hook or
  // while no epoch runs.
  void ApplyCorrection(VertexId v, std::span<const float> delta);

 private:
  struct Impl;
  explicit GraphTrainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The trainer's vectors as a model file's contents (its graph's vertex
// keys, the epoch, dim, signature, seed, negatives and λ). REQUIRES: no epoch
// running.
GraphModel ToGraphModel(const GraphTrainer& trainer);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_GRAPH_GRAPH_TRAINER_H_
