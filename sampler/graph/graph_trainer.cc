#include "sampler/graph/graph_trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "base/tbb_workers.h"
#include "oneapi/tbb/concurrent_queue.h"
#include "oneapi/tbb/parallel_pipeline.h"
#include "oneapi/tbb/task_arena.h"
#include "sampler/graph/internal/pair_kernel.h"
#include "sampler/graph/signature.h"

namespace latentd {
namespace {

// An epoch whose sampled loss is above this many times an all-zero model's
// diverged (GraphTrainer::RunEpoch).
constexpr double kDivergedLossFactor = 4;

// Workers read rows while the updater writes them: relaxed atomic accesses
// (plain moves on x86), so a worker sees each float whole.
float LoadRelaxed(const float* p) {
  return std::atomic_ref<float>(*const_cast<float*>(p))
      .load(std::memory_order_relaxed);
}
void StoreRelaxed(float* p, float v) {
  std::atomic_ref<float>(*p).store(v, std::memory_order_relaxed);
}

// The pipeline's token: a range of the epoch's edge order, then the
// batch's net gradient (workers) and steps (combiner) per vertex.
struct EdgeBatch {
  uint64_t index = 0;
  size_t begin = 0, end = 0;
  std::vector<VertexId> vertices;  // slot -> vertex
  std::vector<uint32_t> touches;   // slot -> pair ends
  std::vector<float> values;       // slot × dim: the rows as read
  std::vector<float> grad;         // slot × dim: gradient, then step
  // vertex -> slot + 1 (0: not in the batch); sized num_vertices on first
  // use and reset entry by entry, so a batch costs what it touches.
  std::vector<uint32_t> slot;
  std::vector<PairTerm> pairs;  // scratch
  double loss = 0;
  uint64_t num_pairs = 0;
};
using BatchPtr = std::unique_ptr<EdgeBatch>;

}  // namespace

absl::Status GraphTrainerOptions::Validate() const {
  auto bad = [](auto&&... what) {
    return absl::InvalidArgumentError(absl::StrCat(what...));
  };
  if (dim < 1 || dim > kMaxDim)
    return bad("dim ", dim, " is not in [1, ", kMaxDim, "]");
  if (negative_dims >= dim)
    return bad("negative dims ", negative_dims, " is not below dim ", dim);
  if (negatives < 0 || negatives > 1000)
    return bad("negatives ", negatives, " is not in [0, 1000]");
  if (!(lambda >= 0) || !std::isfinite(lambda))
    return bad("lambda ", lambda, " is not a finite number >= 0");
  if (!(mu >= 0) || !std::isfinite(mu))
    return bad("mu ", mu, " is not a finite number >= 0");
  if (!(learning_rate > 0) || !std::isfinite(learning_rate))
    return bad("learning rate ", learning_rate, " is not a finite number > 0");
  if (!(learning_rate_decay >= 0) || !std::isfinite(learning_rate_decay))
    return bad("learning rate decay ", learning_rate_decay,
               " is not a finite number >= 0");
  if (!(init_scale >= 0) || !std::isfinite(init_scale))
    return bad("init scale ", init_scale, " is not a finite number >= 0");
  if (threads < 1) return bad("threads ", threads, " is not >= 1");
  if (batch_edges < 1) return bad("batch edges must be >= 1");
  return absl::OkStatus();
}

struct GraphTrainer::Impl {
  Impl(GraphData g, const GraphTrainerOptions& o)
      : graph(std::move(g)),
        options(o),
        evaluator(graph, o.negatives, o.seed),
        pool(NegativePool(graph)),
        arena(EnsureTbbThreads(o.threads)) {}

  GraphData graph;
  GraphTrainerOptions options;
  ObjectiveEvaluator evaluator;
  std::vector<VertexId> pool;       // negatives are drawn from these
  std::vector<float> share;         // 1 / expected touches per epoch
  std::vector<float> lambda_scale;  // per vertex, or empty (1)
  std::vector<float> mu_scale;      // per vertex, or empty (1)
  std::vector<float> step_scale;    // per vertex, or empty (1)
  std::vector<float> z;             // num_vertices × dim
  std::vector<float> z_at_start;    // z as the epoch found it (undo)
  // An epoch's pair terms for an all-zero model: Σ w/2 over the edges
  // (a negative's y is 0).
  double zero_model_loss = 0;
  bool last_diverged = false;
  std::vector<float> target;    // consensus target, or empty
  std::vector<uint32_t> order;  // the epoch's edge order
  uint64_t epoch = 0;
  UpdaterHook hook;
  tbb::task_arena arena;
  tbb::concurrent_queue<BatchPtr> spare;

  void Work(EdgeBatch* b, float lambda, float mu) const;
};

// Worker: the batch's pairs, their gradient per vertex, and each touched
// vertex's share of the λ and μ terms.
void GraphTrainer::Impl::Work(EdgeBatch* b, float lambda, float mu) const {
  const uint32_t d = options.dim;
  if (b->slot.size() != graph.num_vertices()) {
    b->slot.assign(graph.num_vertices(), 0);
  }
  for (VertexId v : b->vertices) b->slot[v] = 0;
  b->vertices.clear();
  b->touches.clear();
  b->values.clear();
  b->grad.clear();
  b->loss = 0;
  b->num_pairs = 0;
  auto slot_of = [&](VertexId v) -> uint32_t {
    uint32_t& slot = b->slot[v];
    if (slot == 0) {
      slot = static_cast<uint32_t>(b->vertices.size()) + 1;
      b->vertices.push_back(v);
      b->touches.push_back(0);
      const float* row = &z[size_t{v} * d];
      for (uint32_t k = 0; k < d; ++k)
        b->values.push_back(LoadRelaxed(row + k));
      b->grad.resize(b->grad.size() + d, 0.0f);
    }
    return slot - 1;
  };
  for (size_t i = b->begin; i < b->end; ++i) {
    const uint32_t e = order[i];
    const GraphEdge& edge = graph.edges()[e];
    b->pairs.clear();
    b->pairs.push_back({edge.src, edge.dst, 1.0f, edge.weight});
    DrawNegatives(edge, e, options.negatives, pool, options.seed, epoch + 1,
                  &b->pairs);
    for (const PairTerm& p : b->pairs) {
      const uint32_t sa = slot_of(p.a), sb = slot_of(p.b);
      b->loss += internal::PairGradient(
          &b->values[size_t{sa} * d], &b->values[size_t{sb} * d], d,
          options.negative_dims, p.y, p.w, &b->grad[size_t{sa} * d],
          &b->grad[size_t{sb} * d]);
      ++b->touches[sa];
      ++b->touches[sb];
      ++b->num_pairs;
    }
  }
  for (size_t s = 0; s < b->vertices.size(); ++s) {
    const VertexId v = b->vertices[s];
    const float times = static_cast<float>(b->touches[s]) * share[v];
    const float* t = target.empty() ? nullptr : &target[size_t{v} * d];
    const float l = lambda_scale.empty() ? lambda : lambda * lambda_scale[v];
    const float u = mu_scale.empty() ? mu : mu * mu_scale[v];
    internal::VertexTermGradient(&b->values[s * d], t, d, l * times, u * times,
                                 &b->grad[s * d]);
  }
}

GraphTrainer::GraphTrainer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
GraphTrainer::~GraphTrainer() = default;

void GraphTrainer::InitialRow(const GraphTrainerOptions& options, VertexKey key,
                              float* out) {
  Rng rng = Rng::ForStream(options.seed, key, 0x696e6974);
  for (uint32_t k = 0; k < options.dim; ++k) {
    out[k] = static_cast<float>(options.init_scale * rng.Normal());
  }
}

absl::StatusOr<std::unique_ptr<GraphTrainer>> GraphTrainer::Create(
    GraphData graph, const GraphTrainerOptions& options,
    std::vector<float> initial, uint64_t start_epoch) {
  LATENTD_RETURN_IF_ERROR(options.Validate());
  if (graph.num_edges() == 0) {
    return absl::InvalidArgumentError("the graph has no edges to train on");
  }
  const size_t n = graph.num_vertices();
  const uint32_t d = options.dim;
  if (!initial.empty() && initial.size() != n * d) {
    return absl::InvalidArgumentError(absl::StrCat(
        "initial vectors hold ", initial.size(), " values, not ", n, " × ", d));
  }
  auto impl = std::make_unique<Impl>(std::move(graph), options);
  impl->epoch = start_epoch;
  const std::vector<double> touches =
      ExpectedTouches(impl->graph, options.negatives);
  impl->share.resize(n);
  for (size_t i = 0; i < n; ++i) {
    impl->share[i] = touches[i] > 0 ? static_cast<float>(1 / touches[i]) : 0;
  }
  if (!initial.empty()) {
    impl->z = std::move(initial);
  } else {
    impl->z.resize(n * d);
    for (size_t i = 0; i < n; ++i) {
      InitialRow(options, impl->graph.keys()[i], &impl->z[i * d]);
    }
  }
  impl->order.resize(impl->graph.num_edges());
  for (const GraphEdge& e : impl->graph.edges()) {
    impl->zero_model_loss += 0.5 * e.weight;
  }
  return std::unique_ptr<GraphTrainer>(new GraphTrainer(std::move(impl)));
}

absl::StatusOr<EpochResult> GraphTrainer::RunEpoch() {
  Impl& m = *impl_;
  const auto start = std::chrono::steady_clock::now();
  const uint32_t d = m.options.dim;
  std::iota(m.order.begin(), m.order.end(), 0);
  Rng shuffle = Rng::ForStream(m.options.seed, m.epoch + 1, 0x73687566);
  for (size_t i = m.order.size(); i > 1; --i) {
    std::swap(m.order[i - 1], m.order[shuffle.UniformInt(i)]);
  }
  EpochResult result;
  result.learning_rate =
      m.options.learning_rate / (1 + m.options.learning_rate_decay * m.epoch);
  const float eta = static_cast<float>(result.learning_rate);
  const float lambda = static_cast<float>(m.options.lambda);
  const float mu = m.target.empty() ? 0.0f : static_cast<float>(m.options.mu);
  int in_flight = m.options.max_batches_in_flight;
  if (in_flight <= 0)
    in_flight = m.options.threads == 1 ? 1 : 2 * m.options.threads + 1;

  m.last_diverged = false;
  if (m.options.undo_diverged_epoch)
    m.z_at_start.assign(m.z.begin(), m.z.end());
  absl::Mutex error_mu;
  absl::Status error;
  std::atomic<bool> failed{false};
  std::atomic<bool> diverged{false};
  auto fail = [&](absl::Status s) {
    absl::MutexLock l(&error_mu);
    if (error.ok()) error = std::move(s);
    failed.store(true, std::memory_order_release);
  };
  size_t next = 0;
  uint64_t batch_index = 0;

  auto read = [&](tbb::flow_control& fc) -> BatchPtr {
    if (next >= m.order.size() || failed.load(std::memory_order_acquire)) {
      fc.stop();
      return nullptr;
    }
    BatchPtr b;
    if (!m.spare.try_pop(b)) b = std::make_unique<EdgeBatch>();
    b->index = batch_index++;
    b->begin = next;
    b->end = std::min(m.order.size(), next + m.options.batch_edges);
    next = b->end;
    return b;
  };
  auto work = [&](BatchPtr b) -> BatchPtr {
    if (!failed.load(std::memory_order_acquire)) m.Work(b.get(), lambda, mu);
    return b;
  };
  auto combine = [&](BatchPtr b) -> BatchPtr {
    // One pass: step = −η · (the vertex's step scale) · gradient.
    for (size_t s = 0; s < b->vertices.size(); ++s) {
      const float rate =
          m.step_scale.empty() ? -eta : -eta * m.step_scale[b->vertices[s]];
      float* g = &b->grad[s * d];
      bool finite = true;
      for (uint32_t k = 0; k < d; ++k) {
        g[k] *= rate;
        finite &= std::isfinite(g[k]);
      }
      if (!finite) {
        diverged.store(true, std::memory_order_relaxed);
        fail(absl::InternalError(absl::StrCat(
            "graph training diverged in epoch ", m.epoch + 1, " (batch ",
            b->index, "): a step is not finite; lower the learning rate (",
            result.learning_rate, ")")));
        break;
      }
    }
    return b;
  };
  auto update = [&](BatchPtr b) {
    if (!failed.load(std::memory_order_acquire)) {
      for (size_t s = 0; s < b->vertices.size(); ++s) {
        float* row = &m.z[size_t{b->vertices[s]} * d];
        const float* step = &b->grad[s * d];
        for (uint32_t k = 0; k < d; ++k)
          StoreRelaxed(row + k, row[k] + step[k]);
      }
      if (m.hook) {
        absl::Status s = m.hook(b->vertices, b->grad);
        if (!s.ok()) fail(std::move(s));
      }
      result.edges += b->end - b->begin;
      result.pairs += b->num_pairs;
      result.sampled_loss += b->loss;
    }
    m.spare.push(std::move(b));
  };
  m.arena.execute([&] {
    tbb::parallel_pipeline(static_cast<size_t>(in_flight),
                           tbb::make_filter<void, BatchPtr>(
                               tbb::filter_mode::serial_in_order, read) &
                               tbb::make_filter<BatchPtr, BatchPtr>(
                                   tbb::filter_mode::parallel, work) &
                               tbb::make_filter<BatchPtr, BatchPtr>(
                                   tbb::filter_mode::serial_in_order, combine) &
                               tbb::make_filter<BatchPtr, void>(
                                   tbb::filter_mode::serial_in_order, update));
  });
  // Finite but far worse than predicting 0 for every pair: the steps
  // overshot (they turn non-finite an epoch or two later, and the epochs
  // before would be kept).
  if (!failed.load() && m.zero_model_loss > 0 &&
      result.sampled_loss > kDivergedLossFactor * m.zero_model_loss) {
    diverged.store(true);
    fail(absl::InternalError(absl::StrFormat(
        "graph training diverged in epoch %d: its loss %.6g is over %g times "
        "an all-zero model's (%.6g); lower the learning rate (%g)",
        m.epoch + 1, result.sampled_loss, kDivergedLossFactor,
        m.zero_model_loss, result.learning_rate)));
  }
  if (failed.load()) {
    m.last_diverged = diverged.load();
    absl::MutexLock l(&error_mu);
    if (m.last_diverged && m.options.undo_diverged_epoch) {
      // Element by element: rounds may read rows meanwhile (ReadRow).
      for (size_t i = 0; i < m.z.size(); ++i)
        StoreRelaxed(&m.z[i], m.z_at_start[i]);
      return absl::InternalError(
          absl::StrCat(error.message(), "; the epoch's steps were undone"));
    }
    return error;
  }
  ++m.epoch;
  result.epoch = m.epoch;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

ObjectiveEvaluator::Value GraphTrainer::Objective() const {
  ObjectiveEvaluator::Value v;
  impl_->arena.execute([&] {
    v = impl_->evaluator.Evaluate(impl_->z, impl_->options.dim,
                                  impl_->options.negative_dims,
                                  impl_->options.lambda);
  });
  return v;
}

double GraphTrainer::Score(VertexId a, VertexId b) const {
  const uint32_t d = impl_->options.dim;
  return SignedDot(&impl_->z[size_t{a} * d], &impl_->z[size_t{b} * d], d,
                   impl_->options.negative_dims);
}

std::span<const float> GraphTrainer::embeddings() const { return impl_->z; }
const GraphData& GraphTrainer::graph() const { return impl_->graph; }
const GraphTrainerOptions& GraphTrainer::options() const {
  return impl_->options;
}
uint64_t GraphTrainer::epoch() const { return impl_->epoch; }

bool GraphTrainer::last_epoch_diverged() const { return impl_->last_diverged; }

void GraphTrainer::SetLearningRate(double eta) {
  impl_->options.learning_rate = eta;
}

void GraphTrainer::SetConsensusTarget(std::span<const float> target) {
  impl_->target.assign(target.begin(), target.end());
}

void GraphTrainer::SetVertexScales(std::span<const float> lambda_scale,
                                   std::span<const float> mu_scale,
                                   std::span<const float> step_scale) {
  impl_->lambda_scale.assign(lambda_scale.begin(), lambda_scale.end());
  impl_->mu_scale.assign(mu_scale.begin(), mu_scale.end());
  impl_->step_scale.assign(step_scale.begin(), step_scale.end());
}

void GraphTrainer::ReadRow(VertexId v, float* out) const {
  const uint32_t d = impl_->options.dim;
  const float* row = &impl_->z[size_t{v} * d];
  for (uint32_t k = 0; k < d; ++k) out[k] = LoadRelaxed(row + k);
}

void GraphTrainer::SetUpdaterHook(UpdaterHook hook) {
  impl_->hook = std::move(hook);
}

void GraphTrainer::ApplyCorrection(VertexId v, std::span<const float> delta) {
  const uint32_t d = impl_->options.dim;
  float* row = &impl_->z[size_t{v} * d];
  for (uint32_t k = 0; k < d && k < delta.size(); ++k) {
    StoreRelaxed(row + k, row[k] + delta[k]);
  }
}

GraphModel ToGraphModel(const GraphTrainer& trainer) {
  GraphModel::Header h;
  h.dim = trainer.options().dim;
  h.negative_dims = trainer.options().negative_dims;
  h.epoch = trainer.epoch();
  h.seed = trainer.options().seed;
  h.negatives = trainer.options().negatives;
  h.lambda = trainer.options().lambda;
  std::span<const float> z = trainer.embeddings();
  return GraphModel(h, trainer.graph().keys(),
                    std::vector<float>(z.begin(), z.end()));
}

}  // namespace latentd
