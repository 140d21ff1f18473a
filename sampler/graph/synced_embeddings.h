// SyncedEmbeddings: a node's vertex vectors (a GraphTrainer's) seen as the
// keyed Abelian table the cluster synchronizer works on (sync/
// abelian_table.h), for graph factorization across nodes (docs/design.md,
// "Graph consensus").
//
// A held vertex (one with an edge on this node) is one key, its sync key
// VertexSyncKey(vertex id). Its value has dim + 2 coordinates of fixed-point
// integers (value · 2^24, rounded; vector addition of integers is exact, so
// the sums commute and the synchronizer can batch, delay and merge them):
//
//   kDual   coordinates 0..dim-1: this node's local copy weighted by the
//           copy's weight, w_i^(m) x_i^(m); dim: 1 (this node holds the
//           vertex); dim+1: w_i^(m), twice the copy's expected touches per
//           epoch (ExpectedTouches: its edges here and the negatives they
//           draw; w / (2 + negatives) is its edges when negatives come only
//           from its side). The owner's global is then (Σ_m w x, holders,
//           W = Σ_m w), and the consensus z̄_i = Σ_m w x / W. Consensus
//           ADMM (ρ = μ w / (2 + negatives)): RefreshConsensus takes the
//           dual step u ← u + x − z̄ on the scaled dual variable u_i^(m),
//           which stays on this node, and gives the trainer z̄ − u as the
//           copy's target (its ρ / 2 ‖x − target‖² pull) and scales the
//           copy's steps by min(max_step_scale, W / w) (StepScale says
//           why). The dual steps keep Σ_m w u = 0, so at a fixed point
//           Σ_m ∇f_m(z̄) = −Σ_m ρ u = 0, the single node's optimum. The
//           duals stay out of the sums so that a copy that joins or leaves
//           (below) moves z̄ by nothing but its x; ResetDuals restores
//           Σ_m w u = 0 after such a change. A node also takes the share
//           w_i^(m) / W of the vertex's λ term.
//   kNaive  one shared Z (no local copies): coordinates 0..dim-1 are the
//           SGD steps this node applied; every node adds the others' steps
//           to its own vectors as they arrive (corrections, applied by the
//           trainer's updater: ApplyPending from the updater hook), so all
//           copies are the same start plus the sum of every node's steps —
//           parameter-server SGD, kept to compare with.
//
// Changes (sync/synchronizer.h): TakeChange hands over what this
// node's contribution moved since it was last taken (kDual: the whole
// copy the first time, then its change; kNaive: the steps not yet sent,
// the rounding residue kept for next time).
//
// Growing and re-sharding (ingested edges, ring changes; docs/design.md
// "Graph consensus"): Rebind moves the table onto a trainer rebuilt over
// other edges. A key is in one of three states:
//   active    its copy counts in z̄ with its weight w_i^(m);
//   pending   newly held here: it contributes (0, holders 1, weight 0), so
//             the owner counts this node as a holder and sends it the
//             others' sum, and z̄ is the others' alone; the next
//             RefreshConsensus that knows the others' weight (or the second
//             after the key was first sent, if nobody else holds it) sets
//             the copy to z̄ and makes it active, so that a copy that knows
//             nothing (a random start, a stale row) never pulls z̄;
//   releasing the vertex lost its edges here: its copy still counts, as
//             it was, until the next RefreshConsensus, so that a node that
//             took the edges over (pending) learns it first;
//   released  after that: it contributes nothing (the next round takes its
//             copy out of the owner's sums); it is pending again if it
//             regains edges.
// Vertices held for the first time become new keys (appended: existing
// indices keep theirs); a held vertex whose touches here changed has its
// weight w_i^(m) changed; each is sent as a change by the next round.
// MakePending turns every key pending (a node joining a running cluster).
//
// Thread-safety: the AbelianTable methods are thread-safe (one mutex).
// MarkApplied and ApplyPending run on the trainer's single writer (its
// updater hook, or while no epoch runs); Consensus, LambdaScale and
// ConsensusDistance while no epoch runs, or concurrently (they read rows
// with relaxed loads).
#ifndef LATENTD_SAMPLER_GRAPH_SYNCED_EMBEDDINGS_H_
#define LATENTD_SAMPLER_GRAPH_SYNCED_EMBEDDINGS_H_

#include <cstdint>
#include <functional>
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
  // Coordinates after the dim of the vector: holders, weight.
  static constexpr uint32_t kExtra = 2;

  // `trainer` (not owned) must outlive this. Holds every vertex with an
  // edge in trainer->graph().
  // kDual: a copy's steps are scaled by min(max_step_scale, W_i / w_i^(m))
  // (StepScale; values below 1 count as 1).
  SyncedEmbeddings(GraphTrainer* trainer, ConsensusMode mode,
                   double max_step_scale = kDefaultMaxStepScale);
  static constexpr double kDefaultMaxStepScale = 2.0;

  size_t num_keys() const override { return held_.size(); }
  sync::Key key(size_t index) const override { return keys_[index]; }
  uint32_t dimension() const override { return dim_ + kExtra; }
  // The key's value as this node holds it (its contribution and the
  // others' as last heard), for tests and tools: the synchronizer never
  // reads it.
  void Read(size_t index, sync::SparseVector* out) const;
  void EnqueueCorrection(size_t index,
                         const sync::SparseVector& correction) override;
  void TakeDirtyList(std::vector<uint32_t>* out) override;
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
  // kDual: per vertex, w_i^(m) / W_i (1 where the cluster's W is not known
  // yet), for GraphTrainer::SetVertexScales.
  std::vector<float> LambdaScale() const;
  // kDual: per vertex, w_i^(m) / (2 + negatives) (0 where not held): the
  // μ weights.
  std::vector<float> MuScale() const;
  // kDual: per vertex, min(max_step_scale, W_i / w_i^(m)) where W_i is the
  // cluster's total weight of the vertex as last heard (1 where not held
  // or not known yet): the copy's SGD steps are scaled by it. Why: z̄ is
  // the w-weighted mean of the copies, and a copy that fits a share
  // w/W of the vertex's terms moves it about that share of what the single
  // node's epoch would, so the mean moves by Σ (w/W)² of it — 1/M of a
  // single node's step for a vertex split evenly over M nodes. Scaling
  // each copy's steps by W/w makes the mean move by the sum, as a single
  // node's epoch does; the cap keeps η · scale stable (the fixed point is
  // the same: the scale preconditions, it does not change the gradient's
  // zeros).
  std::vector<float> StepScale() const;
  // kDual: the mean over held vertices of ‖x_i − z̄_i‖ (Euclidean).
  double ConsensusDistance() const;
  // Moves the table onto `trainer` (not owned; it must outlive this, and
  // the previous one need not from now on), whose graph has the previous
  // graph's vertices with the same ids and keys first and may have more
  // vertices and other edges. Appends the vertices it holds for the first
  // time as keys (kDual: pending), releases those that lost their edges
  // here, makes pending (kDual) the released ones that regained some (a
  // releasing one active again), and
  // marks changed every key whose weight or state changed. The caller
  // installs the updater hook on `trainer`. kFailedPrecondition (nothing
  // changed) if a vertex id or key moved. REQUIRES: no epoch running on
  // either trainer and no sync round running: inside ClusterLink::GrowKeys
  // (Synchronizer::AddKeys).
  absl::Status Rebind(GraphTrainer* trainer);
  // kDual: every dual variable back to 0. Every member calls it when the
  // set of copies changes (a ring change): the duals of a copy that left
  // are gone, and the others' would no longer sum to zero.
  void ResetDuals();
  // kDual: every key that is not released becomes pending (its copy is
  // replaced by z̄ once the others' sums are known; see above). For a node
  // joining a running cluster. REQUIRES: as Rebind.
  void MakePending();
  // Every key released at once (kDual: no releasing step): the next round
  // takes every copy of this node out of the owners' sums. For a node
  // leaving the cluster. Any thread.
  void ReleaseAll();
  // Keys per state (for logs and tests).
  struct StateCounts {
    size_t active = 0, pending = 0, releasing = 0, released = 0;
  };
  StateCounts state_counts() const;
  // kDual, between epochs: takes z̄ = Consensus(), the dual step u ← u +
  // x − z̄ (active keys), gives the trainer z̄ − u as its target (z̄ for
  // vertices not held) and the λ and μ scales; with `reset`, sets every
  // copy to z̄ (GraphTrainer::ApplyCorrection); activates the pending
  // keys that are due (see
  // above), their copies set to z̄, and releases the releasing ones. Lists
  // every key that is not released. Returns
  // ConsensusDistance() as it was before. REQUIRES: no epoch running (the
  // writer's side).
  double RefreshConsensus(bool reset);

 private:
  enum class KeyState : uint8_t { kActive, kPending, kReleasing, kReleased };

  // *row = this node's contribution now, quantized.
  void Contribution(size_t index, std::vector<int64_t>* row) const;

  // Per vertex: of_share(w_i^(m) / W_i) where this node holds it and W_i
  // is known, `unheld` elsewhere.
  std::vector<float> PerHeld(
      float unheld, const std::function<float(double share)>& of_share) const;
  // Appends vertex v (weight here `weight`) as a new key in `state`,
  // changed.
  void AppendHeld(VertexId v, VertexKey key, uint32_t weight, KeyState state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lists key i as changed.
  void MarkDirty(uint32_t i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether key i's copy counts in z̄ here.
  bool Active(size_t i) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return state_[i] == KeyState::kActive;
  }
  // Per vertex of trainer.graph(), w_i^(m): twice its expected touches per
  // epoch here (ExpectedTouches), rounded, at least 1; 0 if never touched.
  static std::vector<uint32_t> CopyWeights(const GraphTrainer& trainer);

  GraphTrainer* trainer_;  // changed only by Rebind (no round running)
  const ConsensusMode mode_;
  const uint32_t dim_;
  const double max_step_scale_;
  std::vector<VertexId> held_;     // index -> vertex
  std::vector<sync::Key> keys_;    // index -> sync key
  std::vector<int32_t> index_of_;  // vertex -> index, -1 if not held
  // index -> w_i^(m) (pending: once active; releasing: as it was; 0:
  // released).
  std::vector<uint32_t> weight_ ABSL_GUARDED_BY(mu_);
  // index -> state; for a pending key, the RefreshConsensus calls since it
  // was first sent (activated at the second if nobody else holds it).
  std::vector<KeyState> state_ ABSL_GUARDED_BY(mu_);
  std::vector<uint8_t> pending_refreshes_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> pending_sent_ ABSL_GUARDED_BY(mu_);
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
