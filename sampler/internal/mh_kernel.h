// Metropolis–Hastings alias kernel: O(1) work per token whatever K and the
// density of the word's row (the idea of LightLDA, Yuan et al. 2015; the
// design here is our own).
//
// For token i of word w in document d, with topic s0 before the draw, the
// target is the collapsed conditional
//   p(k) ∝ (n_dk + α_k)(n̂_wk − [k = s0] + β) / (n_k + Vβ)
// where n_dk and n_k exclude the token (n_k: the batch's start plus its own
// moves, as SparseLDA sees it) and n̂_w is this kernel's snapshot of the
// word's row (see below). From the chain state s = s0 the kernel runs
// `steps` cycles of two MH moves, each accepted with
// min(1, p(t) q(s) / (p(s) q(t))), so p is the stationary law of every move:
//   word proposal  q_w(k) ∝ n̂_wk/(n̂_k + Vβ) + β/(ñ_k + Vβ): an alias table
//                  over the row's non-zero topics (masses with the n̂_k of
//                  its build) mixed with one alias table of the smoothing
//                  term over all K (ñ_k: the batch's start);
//   doc proposal   q_d(k) ∝ n_dk + α_k: the topic of one of the document's
//                  other tokens, chosen uniformly, or with probability
//                  Σα/(L_d − 1 + Σα) an α-weighted topic.
// Both proposals leave the token itself out of every count they are built
// from (for the word proposal by rejection at s0), so neither depends on
// the token's topic: every move keeps p invariant from any state, which
// makes the sweep a valid MCMC step for the whole chain, not only for a
// long inner chain.
// The result is a draw whose law tends to p as steps grows (the exactness
// tests run many steps); with 1–2 steps a sweep is far cheaper than an
// exact one when rows are dense, and the chain over sweeps still targets
// the LDA posterior of the snapshot counts.
//
// The word snapshot (row counts, the proposal's alias table) is built per
// kernel on the word's first token of a sweep and rebuilt once it has served
// `refresh` times as many draws as its row has slots, so building costs
// O(1) per draw amortized and frequent words see recent counts. Like the
// delayed updates of WarpLDA, a snapshot lags the table by the tokens
// sampled since its build — never by the token itself, which a snapshot
// taken in this sweep always counts at s0.
//
// Visiting order (MhOptions::word_order): in document order, each token
// fetches its word's snapshot and alias table, a cache miss or several on
// any vocabulary larger than the cache. In word order the kernel holds the
// document-topic counts of all the batch's documents at once and visits the
// tokens grouped by word (a radix sort of the batch's words, stable, so
// tokens of a word keep their document order): a word's snapshot is fetched
// once for all its tokens in the batch, and what varies from token to token
// is a document's counts and topics, which the batch keeps within cache.
// Both orders are systematic scans of the same moves, so both keep the
// posterior. A batch whose documents × K counts exceed
// kMaxWordOrderDocCounts is visited in document order.
//
// Thread-safety: one thread per kernel object (SamplingKernel's contract).
#ifndef LATENTD_SAMPLER_INTERNAL_MH_KERNEL_H_
#define LATENTD_SAMPLER_INTERNAL_MH_KERNEL_H_

#include <cstdint>
#include <vector>

#include "base/random.h"
#include "sampler/internal/alias_table.h"
#include "sampler/sampling_kernel.h"

namespace latentd::internal {

class MhKernel final : public SamplingKernel {
 public:
  // Counts (4 bytes each) of the batch's documents that word order may
  // hold at once: 1 MiB, half of an L2 cache of the machines measured.
  static constexpr size_t kMaxWordOrderDocCounts = size_t{1} << 18;

  MhKernel(TopicId num_topics, const MhOptions& options);
  void SampleBatch(const SweepParams& params, DocBatch* batch,
                   std::vector<TopicChange>* changes) override;

 private:
  // One word's snapshot: counts and proposal masses by slot, the alias
  // table over the masses. Dense (slot = topic) when the row held more
  // than a quarter of K topics at build time; otherwise a hash index finds
  // a topic's slot (one cache line, where a binary search took several).
  struct Slot {
    TopicId topic = 0;
    Count count = 0;  // n̂_wk
    double mass = 0;  // n̂_wk / (n̂_k + Vβ), n̂_k of the build
  };
  struct WordCache {
    uint64_t epoch = 0;  // SweepParams::run + 1 of its build (0: never)
    int64_t draws_left = 0;
    bool dense = false;
    double mass = 0;  // Σ of the slots' masses
    std::vector<Slot> slots;
    // Sparse rows: (topic + 1) << 32 | slot, 0 = empty; a power of two.
    std::vector<uint64_t> index;
    AliasTable alias;  // over the slots' masses
  };
  // The word's cache, rebuilt from the table if stale.
  WordCache& CacheFor(const TopicTable& table, WordId word);
  void Build(const TopicTable& table, WordId word, WordCache* c);
  // The slot of `topic` in c, or nullptr.
  static const Slot* SlotOf(const WordCache& c, TopicId topic);
  // The unnormalised target for topic k of a token whose snapshot count of
  // k is `n_wk` (the token excluded).
  double Target(TopicId k, Count n_wk) const {
    return (n_dk_[k] + alpha_[k]) * (n_wk + beta_) /
           (static_cast<double>(n_k_[k]) + beta_sum_);
  }
  // Resamples the token at `position` of the document whose topics are
  // `topics`, of word cache c, whose topic was s0 (already removed from
  // n_dk_ and n_k_).
  TopicId Resample(const WordCache& c, TopicId s0,
                   std::span<const TopicId> topics, size_t position, Rng* rng);
  // Resamples the token at `position` of a document (n_dk_ its counts):
  // moves its count in n_dk_ and n_k_ and records a change.
  void ResampleToken(const TopicTable& table, WordId word,
                     std::span<TopicId> topics, size_t position, Rng* rng,
                     std::vector<TopicChange>* changes);
  // The batch's tokens in document order, or grouped by word.
  void SampleByDocument(const TopicTable& table, DocBatch* batch, Rng* rng,
                        std::vector<TopicChange>* changes);
  void SampleByWord(const TopicTable& table, DocBatch* batch, Rng* rng,
                    std::vector<TopicChange>* changes);

  const TopicId num_topics_;
  const MhOptions options_;
  // Per Run.
  uint64_t epoch_ = 0;
  std::vector<WordCache> words_;
  // Per batch.
  const double* alpha_ = nullptr;
  double alpha_sum_ = 0, beta_ = 0, beta_sum_ = 0;
  std::vector<int64_t> n_k_;
  std::vector<double> smooth_;  // β / (ñ_k + Vβ)
  double smooth_mass_ = 0;
  AliasTable smooth_alias_;
  AliasTable alpha_alias_;
  std::vector<std::pair<TopicId, Count>> row_;  // Build's scratch
  std::vector<double> masses_;                  // Build's scratch
  // Document-topic counts, zero between batches: K per document of the
  // batch in word order, K in document order. n_dk_ points at the counts
  // of the document whose token is being resampled.
  std::vector<Count> doc_counts_;
  Count* n_dk_ = nullptr;
  // Word order's visits: a token's word and index in the batch, sorted by
  // word (topic is sync::SortByRowTopic's column, always 0, so the sort
  // keys on the word alone); doc_of_[token] is its document.
  struct WordVisit {
    WordId word;
    TopicId topic;
    uint32_t token;
  };
  std::vector<WordVisit> visits_, visits_scratch_;
  std::vector<uint32_t> doc_of_;
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_MH_KERNEL_H_
