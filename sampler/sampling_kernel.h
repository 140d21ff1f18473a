// The sampling kernel interface: how one thread resamples the topics of a
// batch of documents against the shared TopicTable. The pipeline only knows
// this interface, so an O(1) Metropolis–Hastings alias kernel can replace
// SparseLDA without touching it.
//
// Thread-safety: a kernel object holds per-thread scratch and is used by one
// thread at a time; many kernels read the same TopicTable concurrently.
#ifndef LATENTD_SAMPLER_SAMPLING_KERNEL_H_
#define LATENTD_SAMPLER_SAMPLING_KERNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/doc_batch.h"
#include "corpora/types.h"
#include "sampler/topic_table.h"

namespace latentd {

// Everything a kernel needs for one sweep, copied in once per sweep so hot
// loops read plain members.
struct SweepParams {
  const TopicTable* table = nullptr;
  std::vector<double> alpha;  // α_k, K entries
  double beta = 0.01;         // β
  double beta_sum = 0.0;      // V·β
  uint64_t seed = 1;          // with sweep and batch index, seeds each batch
  uint64_t sweep = 0;
};

// One token whose topic changed.
struct TopicChange {
  WordId word;
  TopicId old_topic;
  TopicId new_topic;
};

class SamplingKernel {
 public:
  virtual ~SamplingKernel() = default;
  // Resamples every token of `batch` in order, from the collapsed conditional
  // p(z=k) ∝ (n_dk + α_k)(n_wk + β)/(n_k + Vβ) with the token itself
  // excluded, reading params.table (which counts every token's current
  // topic). Writes the new topics into the batch and appends one
  // TopicChange per token whose topic changed. Draws come from a stream
  // seeded by (params.seed, params.sweep, batch->index) only.
  // REQUIRES: every topic in the batch < K and counted in the table.
  virtual void SampleBatch(const SweepParams& params, DocBatch* batch,
                           std::vector<TopicChange>* changes) = 0;
};

enum class KernelKind {
  kSparseLda,  // Yao, Mimno & McCallum 2009: s + r + q buckets
  kDense,      // plain O(K) conditional; the reference and baseline
};

absl::StatusOr<KernelKind> ParseKernelKind(std::string_view name);
std::string_view KernelKindName(KernelKind kind);

// A new kernel with scratch for `num_topics` topics.
std::unique_ptr<SamplingKernel> MakeKernel(KernelKind kind, TopicId num_topics);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_SAMPLING_KERNEL_H_
