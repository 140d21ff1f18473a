// The sampling kernel interface: how one thread resamples the topics of a
// batch of documents against the shared TopicTable. The pipeline only knows
// this interface: SparseLDA (exact), the dense reference, and an O(1)
// Metropolis–Hastings alias kernel plug in behind it.
//
// Thread-safety: a kernel object holds per-thread scratch and is used by one
// thread at a time; many kernels read the same TopicTable concurrently.
#ifndef LATENTD_SAMPLER_SAMPLING_KERNEL_H_
#define LATENTD_SAMPLER_SAMPLING_KERNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/doc_batch.h"
#include "corpora/types.h"
#include "sampler/topic_table.h"

namespace latentd {

// KernelOptions::overlay_max_word_tokens: the batch overlay's cap, chosen
// by the corpus (the default). The overlay keeps parallel sampling near a
// serial sampler's law on short documents, where the word rows weigh most,
// and costs time to a given likelihood on long ones; docs/benchmarks.md
// ("Parallel quality on short documents") has the measurements.
inline constexpr int64_t kOverlayMaxWordTokensAuto = -1;
// The caps auto picks: for documents of fewer than kLongDocumentTokens
// tokens on average (or no documents yet), and for longer ones.
inline constexpr int64_t kDefaultOverlayMaxWordTokens = 256;
inline constexpr int64_t kLongDocumentOverlayMaxWordTokens = 64;
inline constexpr uint64_t kLongDocumentTokens = 64;
// The cap auto picks for a corpus of `num_docs` documents and `num_tokens`
// tokens.
int64_t AutoOverlayMaxWordTokens(uint64_t num_docs, uint64_t num_tokens);
// The setting's text: "auto" (kOverlayMaxWordTokensAuto) or a count of
// tokens, 0..2^62; anything else is kInvalidArgument.
absl::StatusOr<int64_t> ParseOverlayMaxWordTokens(std::string_view text);
std::string OverlayMaxWordTokensName(int64_t max_word_tokens);

// Everything a kernel needs for one sweep, copied in once per sweep so hot
// loops read plain members.
struct SweepParams {
  const TopicTable* table = nullptr;
  std::vector<double> alpha;  // α_k, K entries
  double beta = 0.01;         // β
  double beta_sum = 0.0;      // V·β
  uint64_t seed = 1;          // with sweep and batch index, seeds each batch
  uint64_t sweep = 0;
  // Distinct for every SweepPipeline::Run (the pipeline sets it): kernels
  // that keep snapshots of the table across batches drop them when it
  // changes, since the table may have been rebuilt in between.
  uint64_t run = 0;
  // For the progressive start's pass in two stages (Trainer): with a
  // stride above 1 the progressive kernel samples only the batches whose
  // index is a multiple of it (the first stage) or only the others (the
  // second), and passes the rest through unchanged. Other kernels ignore it.
  uint32_t progressive_stride = 1;
  bool progressive_first_stage = true;
  // The overlay's cap where KernelOptions::overlay_max_word_tokens leaves
  // it to the corpus (kOverlayMaxWordTokensAuto): SweepPipeline::Run sets
  // it from its store's documents (AutoOverlayMaxWordTokens).
  int64_t overlay_max_word_tokens = kDefaultOverlayMaxWordTokens;
};

// One token whose topic changed.
struct TopicChange {
  WordId word;
  TopicId old_topic;  // kUncounted: the change only adds new_topic
  TopicId new_topic;
};

// TopicChange::old_topic of a token the table did not count: the tokens of
// the progressive start's pass, drawn into a cleared table.
inline constexpr TopicId kUncounted = ~TopicId{0};

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
  kSparseLda,  // Yao, Mimno & McCallum 2009: s + r + q buckets; exact
  kDense,      // plain O(K) conditional; the reference and baseline
  kMh,         // O(1) Metropolis–Hastings with alias tables (mh_kernel.h)
  // Not a kernel but a Trainer policy: MH while word rows are dense, then
  // SparseLDA for good (sampler/kernel_policy.h). A SweepPipeline given
  // kAuto runs SparseLDA.
  kAuto,
  // Not a sampler: the pass of a sparse start (TrainerOptions::
  // init_row_topics). Each token of word w gets one of `init_row_topics`
  // topics fixed per word by a hash of (seed, w), uniformly, ignoring the
  // counts; so every word row starts with at most that many topics and the
  // first exact sweep is cheap. Not accepted by ParseKernelKind.
  kSparseInit,
  // Not a sampler either: the pass of the progressive start
  // (TrainerOptions::progressive_start), which draws each token given the
  // tokens placed before it into a cleared table
  // (internal/progressive_start_kernel.h). Not accepted by ParseKernelKind.
  kProgressiveStart,
};

// "sparse", "dense", "mh", "auto"; anything else is kInvalidArgument.
absl::StatusOr<KernelKind> ParseKernelKind(std::string_view name);
std::string_view KernelKindName(KernelKind kind);

// The vector paths this process samples with, as the CPU and LATENTD_CPU
// allow, for logs and benchmark banners: "row walk avx512, dense rows
// avx512, row searches avx512"; each is "avx512", "avx2" or "scalar" (the
// row searches "scalar" where the count updater maps rows instead).
// Thread-safe; call after static initialization.
std::string CpuPathsDescription();

// Settings of the MH kernel.
struct MhOptions {
  // MH cycles per token, each a word-proposal and a document-proposal move.
  // More steps: a draw closer to the exact conditional, at O(steps) cost.
  int steps = 2;
  // A word's proposal snapshot is rebuilt after serving refresh × (its
  // slots) draws: smaller is fresher and costlier. REQUIRES: > 0.
  double refresh = 1.0;
  // Visits a batch's tokens grouped by word (the batch's document-topic
  // counts held for all its documents at once), so that a word's proposal
  // and snapshot are fetched once per batch instead of once per token, as
  // WarpLDA's word pass does; off, in document order. Batches whose
  // documents × K counts would not fit in cache are visited in document
  // order either way (mh_kernel.h).
  bool word_order = true;
};

// Settings of every kernel kind, one struct so the pipeline passes them on.
struct KernelOptions {
  MhOptions mh;
  // SparseLDA and dense: the later tokens of a batch see the batch's own
  // moves on the word rows (sampler/internal/batch_overlay.h) of the words
  // it follows (below), so a batch is sampled as a serial Gibbs sampler
  // would, up to the other words' own moves; off, they see the rows as
  // the batch began (the behaviour before issue 15). MH keeps its own
  // snapshots either way.
  bool batch_overlay = true;
  // The overlay follows only the words with at most this many tokens in
  // the table (0: every word, which makes one thread's law exactly a serial
  // sampler's): a batch holds about its share of the corpus (under 1%) of
  // a frequent word's tokens, so its own moves barely change that word's
  // row, while following them is most of the overlay's cost
  // (batch_overlay.h; docs/benchmarks.md, "Kernels").
  // kOverlayMaxWordTokensAuto: SweepParams::overlay_max_word_tokens.
  int64_t overlay_max_word_tokens = kOverlayMaxWordTokensAuto;
  uint32_t init_row_topics = 8;  // kSparseInit's topics per word, >= 1
};

// A new kernel with scratch for `num_topics` topics.
std::unique_ptr<SamplingKernel> MakeKernel(KernelKind kind, TopicId num_topics,
                                           const KernelOptions& options = {});

}  // namespace latentd

#endif  // LATENTD_SAMPLER_SAMPLING_KERNEL_H_
