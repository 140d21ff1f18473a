// SyncedEmbeddings: a node's vertex vectors (a GraphTrainer's) seen as the
// keyed Abelian table the cluster synchronizer works on (sync/
// abelian_table.h), for graph factorization across nodes (DESIGN.md, "Graph
// factorization by dual decomposition").
//
// A held vertex (one with an edge on this node) is one key, its sync key
// VertexSyncKey(vertex id). Its value has dim + 2 coordinates of fixed-point
// integers (value · 2^24, rounded; vector addition of integers is exact, so
// the sums commute and the synchronizer can batch, delay and merge them):
//
//   kDual   coordinates 0..dim-1: this node's local copy plus its scaled
//           dual variable (consensus ADMM, ρ = μ w), weighted by the
//           vertex's edges here, w_i^(m) (x_i^(m) + u_i^(m)); dim: 1 (this
//           node holds the vertex); dim+1: w_i^(m). The owner's global is
//           then (Σ_m w (x + u), holders, degree), and the consensus z̄_i =
//           Σ_m w (x + u) / Σ_m w. RefreshConsensus takes the dual step u ←
//           u + x − z̄ and gives the trainer z̄ − u as the copy's target
//           (its μ w / 2 ‖x − target‖² pull); at a fixed point Σ_m ∇f_m(z̄)
//           = 0, the single node's optimum. A node also takes the share
//           w_i^(m) / degree of the vertex's λ term.
//   kNaive  one shared Z (no local copies): coordinates 0..dim-1 are the
//           SGD steps this node applied; every node adds the others' steps
//           to its own vectors as they arrive (corrections, applied by the
//           trainer's updater: ApplyPending from the updater hook), so all
//           copies are the same start plus the sum of every node's steps —
//           parameter-server SGD, kept to compare with.
//
// Change mode (sync/synchronizer.h): TakeChange hands over what this
// node's contribution moved since it was last taken (kDual: the whole
// copy the first time, then its change; kNaive: the steps not yet sent,
// the rounding residue kept for next time).
//
// Growing (ingested edges, docs/latentd.md "Ingesting edges into a graph
// cluster"): Rebind moves the table onto a trainer rebuilt over more edges;
// vertices it now holds become new keys (appended: existing indices keep
// theirs), and a held vertex whose degree here grew has its weight w_i^(m)
// changed, both sent as changes by the next round.
//
// Thread-safety: the AbelianTable methods are thread-safe (one mutex).
// MarkApplied and ApplyPending run on the trainer's single writer (its
// updater hook, or while no epoch runs); Consensus, LambdaScale and
// ConsensusDistance while no epoch runs, or concurrently (they read rows
// with relaxed loads).
#ifndef LATENTD_SAMPLER_GRAPH_SYNCED_EMBEDDINGS_H_
#define LATENTD_SAMPLER_GRAPH_SYNCED_EMBEDDINGS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "corpora/edge_list.h"
#include "sampler/graph/graph_trainer.h"
#include "sync/abelian_table.h"

namespace latentd {

enum class ConsensusMode { kDual, kNaive };

// The synchronizer key of a vertex: in its own key space, apart from word
// keys and from the topic totals key.
sync::Key VertexSyncKey(VertexKey vertex);

class SyncedEmbeddings final : public sync::AbelianTable {
 public:
  static constexpr double kScale = 16777216.0;  // 2^24

  // `trainer` (not owned) must outlive this. Holds every vertex with an
  // edge in trainer->graph().
  SyncedEmbeddings(GraphTrainer* trainer, ConsensusMode mode);

  size_t num_keys() const override { return held_.size(); }
  sync::Key key(size_t index) const override { return keys_[index]; }
  uint32_t dimension() const override { return dim_ + 2; }
  void Read(size_t index, sync::SparseVector* out) const override;
  void EnqueueCorrection(size_t index,
                         const sync::SparseVector& correction) override;
  bool TakeDirtyList(std::vector<uint32_t>* out) override;
  bool TracksChanges() const override { return true; }
  void TakeChange(size_t index, sync::SparseVector* out) override;

  // Writer: the trainer applied `steps` (|vertices| × dim) to `vertices`.
  // Marks them changed (kNaive: adds the steps to what is to be sent).
  void MarkApplied(std::span<const VertexId> vertices,
                   std::span<const float> steps);
  // Writer, kNaive: adds the others' queued steps to the trainer's vectors
  // (GraphTrainer::ApplyCorrection). No-op for kDual.
  void ApplyPending();
  // The updater hook to install on the trainer: MarkApplied, then
  // ApplyPending.
  GraphTrainer::UpdaterHook Hook();

  // kDual: the consensus z̄ as this node knows it: its own contributions
  // (copy + dual) as they are now with the others' as last heard (num_vertices
  // × dim; a vertex not held here keeps its own value). kNaive: the vectors.
  std::vector<float> Consensus() const;
  // kDual: per vertex, degree here / degree in the cluster (1 where the
  // cluster's degree is not known yet), for GraphTrainer::SetVertexScales.
  std::vector<float> LambdaScale() const;
  // kDual: per vertex, its degree here (0 where not held): the μ weights.
  std::vector<float> MuScale() const;
  // kDual: the mean over held vertices of ‖x_i − z̄_i‖ (Euclidean).
  double ConsensusDistance() const;
  // Moves the table onto `trainer` (not owned; it must outlive this, and
  // the previous one need not from now on), whose graph has the previous
  // graph's vertices with the same ids and keys first and may have more
  // vertices and edges. Appends the vertices it newly holds as keys and
  // marks changed every held vertex whose degree here changed. The caller
  // installs the updater hook on `trainer`. kFailedPrecondition (nothing
  // changed) if a vertex id or key moved, or a held vertex lost its edges.
  // REQUIRES: no epoch running on either trainer and no sync round
  // running: inside ClusterLink::GrowKeys (Synchronizer::AddKeys).
  absl::Status Rebind(GraphTrainer* trainer);
  // kDual, between epochs: takes z̄ = Consensus(), the dual step u ← u +
  // x − z̄, gives the trainer z̄ − u as its target (z̄ for vertices not
  // held) and the λ and μ scales; with `reset`, sets every copy to z̄
  // (GraphTrainer::ApplyCorrection: a held copy's contribution x + u is
  // then unchanged). Lists every held key. Returns ConsensusDistance() as
  // it was before. REQUIRES: no epoch running (the writer's side).
  double RefreshConsensus(bool reset);

 private:
  // *row = this node's contribution now, quantized.
  void Contribution(size_t index, std::vector<int64_t>* row) const;

  // Appends vertex v (degree here `degree`) as a new key, changed.
  void AppendHeld(VertexId v, VertexKey key, uint32_t degree)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  GraphTrainer* trainer_;  // changed only by Rebind (no round running)
  const ConsensusMode mode_;
  const uint32_t dim_;
  std::vector<VertexId> held_;     // index -> vertex
  std::vector<sync::Key> keys_;    // index -> sync key
  std::vector<int32_t> index_of_;  // vertex -> index, -1 if not held
  std::vector<uint32_t> degree_;   // index -> edges here
  mutable absl::Mutex mu_;
  // kDual: the contribution last taken, (dim + 2) per index.
  std::vector<int64_t> taken_ ABSL_GUARDED_BY(mu_);
  // The others' sum as received (corrections), (dim + 2) per index.
  std::vector<int64_t> others_ ABSL_GUARDED_BY(mu_);
  // kDual: the scaled dual variables u_i^(m) (ADMM), dim per index.
  std::vector<float> dual_ ABSL_GUARDED_BY(mu_);
  // kNaive: steps applied here and not yet sent, dim per index.
  std::vector<double> unsent_ ABSL_GUARDED_BY(mu_);
  // kNaive: received steps not yet applied to the trainer.
  std::vector<std::pair<uint32_t, std::vector<float>>> pending_
      ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> dirty_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> is_dirty_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd

#endif  // LATENTD_SAMPLER_GRAPH_SYNCED_EMBEDDINGS_H_
