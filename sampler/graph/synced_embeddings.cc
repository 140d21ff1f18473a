#include "sampler/graph/synced_embeddings.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/random.h"

namespace latentd {
namespace {

constexpr uint64_t kVertexKeySpace = 0x7665727465780000;  // "vertex"

void AppendCanonical(const std::vector<int64_t>& dense,
                     sync::SparseVector* out) {
  out->clear();
  for (size_t k = 0; k < dense.size(); ++k) {
    if (dense[k] != 0) out->push_back({static_cast<uint32_t>(k), dense[k]});
  }
}

}  // namespace

sync::Key VertexSyncKey(VertexKey vertex) {
  sync::Key k = Mix64(vertex ^ kVertexKeySpace);
  return k == sync::kTopicTotalsKey ? k - 1 : k;
}

SyncedEmbeddings::SyncedEmbeddings(GraphTrainer* trainer, ConsensusMode mode,
                                   double max_step_scale)
    : trainer_(trainer),
      mode_(mode),
      dim_(trainer->options().dim),
      max_step_scale_(std::max(1.0, max_step_scale)) {
  const GraphData& g = trainer->graph();
  const std::vector<uint32_t> weight = CopyWeights(*trainer);
  index_of_.assign(g.num_vertices(), -1);
  absl::MutexLock l(&mu_);
  for (size_t v = 0; v < weight.size(); ++v) {
    if (weight[v] > 0) {
      AppendHeld(static_cast<VertexId>(v), g.keys()[v], weight[v],
                 KeyState::kActive);
    }
  }
}

std::vector<uint32_t> SyncedEmbeddings::CopyWeights(
    const GraphTrainer& trainer) {
  const std::vector<double> touches =
      ExpectedTouches(trainer.graph(), trainer.options().negatives);
  std::vector<uint32_t> weight(touches.size());
  for (size_t v = 0; v < touches.size(); ++v) {
    weight[v] =
        touches[v] > 0
            ? static_cast<uint32_t>(std::max<double>(
                  1, std::min<double>(std::round(2 * touches[v]), 1u << 30)))
            : 0;
  }
  return weight;
}

void SyncedEmbeddings::AppendHeld(VertexId v, VertexKey key, uint32_t weight,
                                  KeyState state) {
  const uint32_t i = static_cast<uint32_t>(held_.size());
  index_of_[v] = static_cast<int32_t>(i);
  held_.push_back(v);
  keys_.push_back(VertexSyncKey(key));
  weight_.push_back(weight);
  state_.push_back(state);
  pending_refreshes_.push_back(0);
  pending_sent_.push_back(false);
  taken_.resize(held_.size() * (dim_ + kExtra), 0);
  others_.resize(held_.size() * (dim_ + kExtra), 0);
  dual_.resize(held_.size() * dim_, 0.0f);
  if (mode_ == ConsensusMode::kNaive) unsent_.resize(held_.size() * dim_, 0.0);
  // A key starts changed under kDual (its whole copy is to be sent); under
  // kNaive once it has steps to send.
  const bool dirty = mode_ == ConsensusMode::kDual;
  is_dirty_.push_back(false);
  if (dirty) MarkDirty(i);
}

void SyncedEmbeddings::MarkDirty(uint32_t i) {
  if (is_dirty_[i]) return;
  is_dirty_[i] = true;
  dirty_.push_back(i);
}

absl::Status SyncedEmbeddings::Rebind(GraphTrainer* trainer) {
  const GraphData& old_graph = trainer_->graph();
  const GraphData& g = trainer->graph();
  if (g.num_vertices() < old_graph.num_vertices() ||
      !std::equal(old_graph.keys().begin(), old_graph.keys().end(),
                  g.keys().begin())) {
    return absl::FailedPreconditionError(
        "SyncedEmbeddings::Rebind: the new graph does not keep the vertex "
        "ids of the old one");
  }
  const std::vector<uint32_t> weight = CopyWeights(*trainer);
  const bool dual = mode_ == ConsensusMode::kDual;
  absl::MutexLock l(&mu_);
  trainer_ = trainer;
  index_of_.resize(g.num_vertices(), -1);
  for (uint32_t i = 0; i < held_.size(); ++i) {
    const uint32_t w = weight[held_[i]];
    KeyState& state = state_[i];
    if (w == 0) {
      // Lost its edges here: its copy leaves the owner's sums (releasing:
      // at the next RefreshConsensus; see the header).
      if (state == KeyState::kActive && dual) {
        state = KeyState::kReleasing;
      } else if (state != KeyState::kReleasing &&
                 state != KeyState::kReleased) {
        state = KeyState::kReleased;
        weight_[i] = 0;
        std::fill_n(&dual_[size_t{i} * dim_], dim_, 0.0f);
        MarkDirty(i);
      }
      continue;
    }
    if (state == KeyState::kReleased) {
      // Regained some: the copy here is stale; it takes z̄ first.
      state = dual ? KeyState::kPending : KeyState::kActive;
      pending_refreshes_[i] = 0;
      pending_sent_[i] = false;
    } else if (state == KeyState::kReleasing) {
      state = KeyState::kActive;  // its copy still counts
    } else if (w == weight_[i]) {
      continue;
    }
    // w_i^(m) or the state changed: the contribution is to be sent again.
    weight_[i] = w;
    MarkDirty(i);
  }
  for (size_t v = 0; v < weight.size(); ++v) {
    if (weight[v] > 0 && index_of_[v] < 0) {
      AppendHeld(static_cast<VertexId>(v), g.keys()[v], weight[v],
                 dual ? KeyState::kPending : KeyState::kActive);
    }
  }
  return absl::OkStatus();
}

void SyncedEmbeddings::ResetDuals() {
  absl::MutexLock l(&mu_);
  std::fill(dual_.begin(), dual_.end(), 0.0f);
}

void SyncedEmbeddings::MakePending() {
  if (mode_ != ConsensusMode::kDual) return;
  absl::MutexLock l(&mu_);
  for (uint32_t i = 0; i < held_.size(); ++i) {
    if (state_[i] == KeyState::kReleased) continue;
    if (state_[i] == KeyState::kReleasing) {
      state_[i] = KeyState::kReleased;
      weight_[i] = 0;
      MarkDirty(i);
      continue;
    }
    state_[i] = KeyState::kPending;
    pending_refreshes_[i] = 0;
    pending_sent_[i] = false;
    std::fill_n(&dual_[size_t{i} * dim_], dim_, 0.0f);
    MarkDirty(i);
  }
}

void SyncedEmbeddings::ReleaseAll() {
  absl::MutexLock l(&mu_);
  for (uint32_t i = 0; i < held_.size(); ++i) {
    if (state_[i] == KeyState::kReleased) continue;
    state_[i] = KeyState::kReleased;
    weight_[i] = 0;
    std::fill_n(&dual_[size_t{i} * dim_], dim_, 0.0f);
    MarkDirty(i);
  }
}

SyncedEmbeddings::StateCounts SyncedEmbeddings::state_counts() const {
  StateCounts c;
  absl::MutexLock l(&mu_);
  for (KeyState s : state_) {
    if (s == KeyState::kActive) ++c.active;
    if (s == KeyState::kPending) ++c.pending;
    if (s == KeyState::kReleasing) ++c.releasing;
    if (s == KeyState::kReleased) ++c.released;
  }
  return c;
}

void SyncedEmbeddings::Contribution(size_t index,
                                    std::vector<int64_t>* row) const {
  row->assign(dim_ + kExtra, 0);
  std::vector<float> x(dim_);
  trainer_->ReadRow(held_[index], x.data());
  {
    absl::MutexLock l(&mu_);
    // Released: nothing; pending: a holder that weighs nothing yet.
    if (state_[index] == KeyState::kReleased) return;
    if (state_[index] == KeyState::kPending) {
      (*row)[dim_] = 1;
      return;
    }
    (*row)[dim_ + 1] = weight_[index];  // (RefreshConsensus changes it)
  }
  const double w = static_cast<double>((*row)[dim_ + 1]);
  for (uint32_t k = 0; k < dim_; ++k) {
    (*row)[k] = std::llround(double{x[k]} * w * kScale);
  }
  (*row)[dim_] = 1;
}

void SyncedEmbeddings::Read(size_t index, sync::SparseVector* out) const {
  absl::MutexLock l(&mu_);
  std::vector<int64_t> sum(dim_ + kExtra);
  for (uint32_t k = 0; k < dim_ + kExtra; ++k) {
    sum[k] = taken_[index * (dim_ + kExtra) + k] +
             others_[index * (dim_ + kExtra) + k];
  }
  AppendCanonical(sum, out);
}

void SyncedEmbeddings::EnqueueCorrection(size_t index,
                                         const sync::SparseVector& correction) {
  absl::MutexLock l(&mu_);
  std::vector<float> step;
  if (mode_ == ConsensusMode::kNaive) step.assign(dim_, 0.0f);
  bool any = false;
  for (const sync::SparseEntry& e : correction) {
    if (e.topic >= dim_ + kExtra) continue;  // the synchronizer checked sizes
    others_[index * (dim_ + kExtra) + e.topic] += e.count;
    if (mode_ == ConsensusMode::kNaive && e.topic < dim_) {
      step[e.topic] = static_cast<float>(e.count / kScale);
      any = true;
    }
  }
  if (any) pending_.push_back({static_cast<uint32_t>(index), std::move(step)});
}

void SyncedEmbeddings::TakeDirtyList(std::vector<uint32_t>* out) {
  absl::MutexLock l(&mu_);
  out->insert(out->end(), dirty_.begin(), dirty_.end());
  dirty_.clear();
}

void SyncedEmbeddings::TakeChange(size_t index, sync::SparseVector* out) {
  std::vector<int64_t> delta(dim_ + kExtra, 0);
  if (mode_ == ConsensusMode::kDual) {
    // Unlisted before the row is read: an update the read misses (the
    // updater writes the row, then MarkApplied) lists the key again. Read
    // first and unlisted after, such an update found the key still listed,
    // and its step was never sent (the nodes' final z̄ then differed).
    {
      absl::MutexLock l(&mu_);
      is_dirty_[index] = false;
    }
    std::vector<int64_t> now;
    Contribution(index, &now);
    absl::MutexLock l(&mu_);
    if (state_[index] == KeyState::kPending) pending_sent_[index] = true;
    for (uint32_t k = 0; k < dim_ + kExtra; ++k) {
      int64_t& taken = taken_[index * (dim_ + kExtra) + k];
      delta[k] = now[k] - taken;
      taken = now[k];
    }
  } else {
    absl::MutexLock l(&mu_);
    is_dirty_[index] = false;
    for (uint32_t k = 0; k < dim_; ++k) {
      double& unsent = unsent_[index * dim_ + k];
      delta[k] = std::llround(unsent * kScale);
      unsent -= delta[k] / kScale;
      taken_[index * (dim_ + kExtra) + k] += delta[k];
    }
  }
  AppendCanonical(delta, out);
}

void SyncedEmbeddings::MarkApplied(std::span<const VertexId> vertices,
                                   std::span<const float> steps) {
  absl::MutexLock l(&mu_);
  for (size_t s = 0; s < vertices.size(); ++s) {
    const int32_t i = index_of_[vertices[s]];
    if (i < 0) continue;
    if (mode_ == ConsensusMode::kNaive) {
      for (uint32_t k = 0; k < dim_; ++k) {
        unsent_[size_t(i) * dim_ + k] += steps[s * dim_ + k];
      }
    }
    MarkDirty(static_cast<uint32_t>(i));
  }
}

void SyncedEmbeddings::ApplyPending() {
  std::vector<std::pair<uint32_t, std::vector<float>>> pending;
  {
    absl::MutexLock l(&mu_);
    if (pending_.empty()) return;
    pending.swap(pending_);
  }
  for (const auto& [index, step] : pending) {
    trainer_->ApplyCorrection(held_[index], step);
  }
}

GraphTrainer::UpdaterHook SyncedEmbeddings::Hook() {
  return
      [this](std::span<const VertexId> vertices, std::span<const float> steps) {
        MarkApplied(vertices, steps);
        ApplyPending();
        return absl::OkStatus();
      };
}

std::vector<float> SyncedEmbeddings::Consensus() const {
  std::span<const float> z = trainer_->embeddings();
  std::vector<float> out(z.size());
  for (size_t v = 0; v < index_of_.size(); ++v) {
    trainer_->ReadRow(static_cast<VertexId>(v), &out[v * dim_]);
  }
  if (mode_ != ConsensusMode::kDual) return out;
  // This node's part as its copy is now (fresher than what was last sent,
  // and the same once a round has taken it), plus the others' as heard.
  std::vector<int64_t> mine;
  for (size_t i = 0; i < held_.size(); ++i) {
    Contribution(i, &mine);
    absl::MutexLock l(&mu_);
    const int64_t* o = &others_[i * (dim_ + kExtra)];
    const int64_t weight = mine[dim_ + 1] + o[dim_ + 1];
    if (weight <= 0) continue;  // nobody's copy counts: keep this one
    for (uint32_t k = 0; k < dim_; ++k) {
      out[size_t{held_[i]} * dim_ + k] =
          static_cast<float>((mine[k] + o[k]) / kScale / weight);
    }
  }
  return out;
}

std::vector<float> SyncedEmbeddings::PerHeld(
    float unheld, const std::function<float(double share)>& of_share) const {
  std::vector<float> out(index_of_.size(), unheld);
  absl::MutexLock l(&mu_);
  for (size_t i = 0; i < held_.size(); ++i) {
    const int64_t total = taken_[i * (dim_ + kExtra) + dim_ + 1] +
                          others_[i * (dim_ + kExtra) + dim_ + 1];
    if (Active(i) && total > 0) {
      out[held_[i]] = of_share(static_cast<double>(weight_[i]) / total);
    }
  }
  return out;
}

std::vector<float> SyncedEmbeddings::LambdaScale() const {
  return PerHeld(1.0f, [](double share) { return static_cast<float>(share); });
}

std::vector<float> SyncedEmbeddings::StepScale() const {
  return PerHeld(1.0f, [this](double share) {
    return static_cast<float>(std::min(max_step_scale_, 1 / share));
  });
}

std::vector<float> SyncedEmbeddings::MuScale() const {
  std::vector<float> out(index_of_.size(), 0.0f);
  // ρ_i^(m) = μ w_i^(m) / (2 + negatives): in edge-equivalents, so that μ
  // means what it did when a copy was weighed by its edges alone.
  const float per_edge = 2.0f + std::max(trainer_->options().negatives, 0);
  absl::MutexLock l(&mu_);
  for (size_t i = 0; i < held_.size(); ++i) {
    if (Active(i)) out[held_[i]] = static_cast<float>(weight_[i]) / per_edge;
  }
  return out;
}

double SyncedEmbeddings::ConsensusDistance() const {
  std::vector<VertexId> active;
  {
    absl::MutexLock l(&mu_);
    for (size_t i = 0; i < held_.size(); ++i) {
      if (Active(i)) active.push_back(held_[i]);
    }
  }
  if (active.empty()) return 0;
  const std::vector<float> zbar = Consensus();
  std::vector<float> x(dim_);
  double sum = 0;
  for (VertexId v : active) {
    trainer_->ReadRow(v, x.data());
    double d2 = 0;
    for (uint32_t k = 0; k < dim_; ++k) {
      const double diff = double{x[k]} - zbar[size_t{v} * dim_ + k];
      d2 += diff * diff;
    }
    sum += std::sqrt(d2);
  }
  return sum / active.size();
}

double SyncedEmbeddings::RefreshConsensus(bool reset) {
  const double distance = ConsensusDistance();
  const std::vector<float> zbar = Consensus();
  // The copies' targets: z̄ − u for a held vertex (kDual), z̄ otherwise.
  std::vector<float> target = zbar;
  // The pending keys due now (see the header): their copies become z̄.
  std::vector<uint32_t> activated;
  // The releasing keys: their copies leave z̄ from now on.
  std::vector<uint32_t> released;
  if (mode_ == ConsensusMode::kDual) {
    std::vector<float> x(dim_);
    absl::MutexLock l(&mu_);
    for (uint32_t i = 0; i < held_.size(); ++i) {
      if (state_[i] == KeyState::kReleasing) released.push_back(i);
      if (state_[i] == KeyState::kPending) {
        if (pending_sent_[i]) ++pending_refreshes_[i];
        const bool known = others_[size_t{i} * (dim_ + kExtra) + dim_ + 1] > 0;
        if (known || pending_refreshes_[i] >= 2) activated.push_back(i);
        continue;
      }
      if (!Active(i)) continue;
      const size_t v = held_[i];
      trainer_->ReadRow(held_[i], x.data());
      for (uint32_t k = 0; k < dim_; ++k) {
        float& u = dual_[i * dim_ + k];
        u += x[k] - zbar[v * dim_ + k];  // the dual ascent step
        target[v * dim_ + k] = zbar[v * dim_ + k] - u;
      }
    }
  }
  std::vector<float> x(dim_), delta(dim_);
  auto set_to_zbar = [&](VertexId v) {
    trainer_->ReadRow(v, x.data());
    for (uint32_t k = 0; k < dim_; ++k) {
      delta[k] = zbar[size_t{v} * dim_ + k] - x[k];
    }
    trainer_->ApplyCorrection(v, delta);
  };
  if (reset) {
    for (size_t v = 0; v < zbar.size() / dim_; ++v) {
      set_to_zbar(static_cast<VertexId>(v));
    }
  } else {
    for (uint32_t i : activated) set_to_zbar(held_[i]);
  }
  if (mode_ == ConsensusMode::kDual) {
    // w x is what a copy contributes: changed by a reset, and listed
    // without one too, so that a round that read x half-way through sends
    // it settled.
    absl::MutexLock l(&mu_);
    for (uint32_t i : activated) state_[i] = KeyState::kActive;
    for (uint32_t i : released) {
      state_[i] = KeyState::kReleased;
      weight_[i] = 0;
      std::fill_n(&dual_[size_t{i} * dim_], dim_, 0.0f);
      MarkDirty(i);
    }
    for (uint32_t i = 0; i < held_.size(); ++i) {
      if (state_[i] != KeyState::kReleased) MarkDirty(i);
    }
  }
  trainer_->SetConsensusTarget(target);
  trainer_->SetVertexScales(LambdaScale(), MuScale(), StepScale());
  return distance;
}

}  // namespace latentd
