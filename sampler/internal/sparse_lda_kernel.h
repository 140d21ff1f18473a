// SparseLDA kernel (Yao, Mimno & McCallum, KDD 2009). The conditional mass
// splits into a smoothing bucket s = Σ_k α_k β/(n_k+Vβ), a document bucket
// r = Σ_k n_dk β/(n_k+Vβ) over the document's topics, and a word bucket
// q = Σ_k n_wk (α_k+n_dk)/(n_k+Vβ) over the word's non-zero topics; s and r
// are kept up to date incrementally, so a token costs O(non-zeros of its
// word row + document) instead of O(K).
//
// Within a batch the kernel sees the table as it was when the batch began
// plus its own changes to n_dk, n_k and (with the batch overlay, the
// default) n_wk of the words the overlay follows (all of them with
// overlay_max_word_tokens 0: then a batch is sampled exactly as a serial
// Gibbs sampler would sample it from that table); other batches' changes
// reach it once the count updater applies them (as in YahooLDA). Without
// the overlay its own changes to n_wk are not seen either.
#ifndef LATENTD_SAMPLER_INTERNAL_SPARSE_LDA_KERNEL_H_
#define LATENTD_SAMPLER_INTERNAL_SPARSE_LDA_KERNEL_H_

#include <vector>

#include "base/random.h"
#include "sampler/internal/batch_overlay.h"
#include "sampler/internal/sparse_buckets.h"
#include "sampler/sampling_kernel.h"

namespace latentd::internal {

class SparseLdaKernel final : public SamplingKernel {
 public:
  // batch_overlay: whether a batch's tokens see its own moves on n_wk, of
  // the words with at most overlay_max_word_tokens tokens (0: all words).
  SparseLdaKernel(TopicId num_topics, bool batch_overlay,
                  int64_t overlay_max_word_tokens);
  void SampleBatch(const SweepParams& params, DocBatch* batch,
                   std::vector<TopicChange>* changes) override;

 private:
  // Moves the document's count of `topic` by `by` (±1), keeping s, r, the
  // coefficients and the list of the document's topics consistent.
  void MoveCount(TopicId topic, int by, double& s, double& r);

  const TopicId num_topics_;
  const bool use_overlay_;
  // Per batch.
  BatchOverlay overlay_;  // the batch's own moves on n_wk, if use_overlay_
  const double* alpha_ = nullptr;
  double beta_ = 0, beta_sum_ = 0;
  std::vector<int64_t> n_k_;       // n_k as seen by this batch
  std::vector<double> inv_denom_;  // 1 / (n_k + Vβ)
  std::vector<double> coef_;       // (α_k + n_dk) / (n_k + Vβ)
  SmoothingBlocks smoothing_;      // the s bucket's masses by block
  // Per document.
  std::vector<Count> n_dk_;
  std::vector<TopicId> doc_topics_;  // topics with n_dk > 0
  std::vector<uint32_t> doc_pos_;    // position of a topic in doc_topics_
  // The q bucket of the current word: the running mass over its row's
  // non-zero topics (then the overlay's positive deltas of the word, if it
  // moved in this batch), or, for a dense row, over all K topics. The
  // cache is reused by the next tokens of the same word in the same
  // document (bag-of-words corpora keep a word's tokens together: a third
  // of news20's tokens repeat the token before): only the masses of the
  // topics whose coefficient, count or exclusion changed since the build
  // (the dirty topics) are recomputed, from the table's count as the build
  // read it (a dense row's, read again) plus the overlay's, which it
  // focuses on `word`.
  void BuildWordCache(const TopicTable& table, WordId word, TopicId excluded);
  // A draw from the built cache for u in [0, cache_total_).
  TopicId DrawFromCache(double u) const;
  // Adds `topic` to the dirty topics; false if there is no room (then the
  // cache must be rebuilt).
  bool MarkDirty(TopicId topic);
  // The current q mass from the cache and the dirty topics' fresh masses.
  double ReusedMass(const TopicTable& table, TopicId excluded);
  // A draw from the q bucket for u in [0, ReusedMass()).
  TopicId DrawReused(double u, const TopicTable& table, TopicId excluded,
                     Rng* rng);

  // Sparse caches: finds the row slot and the overlay slot (or -1) of
  // each dirty topic not yet looked up since the build. A repeated word
  // changes only a few topics, so searching its walked row for them
  // (kFindTopic) costs less than mapping every slot, which at large K
  // stored into a map of 2K entries that missed the cache.
  void LocateDirty();
  // Adds the cache slot's mass to the dirty intervals.
  void AddInterval(uint32_t slot);

  static constexpr uint32_t kMaxDirty = 8;
  static constexpr uint32_t kMaxIntervals = 2 * kMaxDirty;
  // The shortest sparse cache that is reused (news20, K=100 and K=1000).
  static constexpr uint32_t kMinReusedSlots = 16;
  std::vector<TopicId> q_topics_;  // sparse rows: the slots' topics
  std::vector<double> q_mass_;     // running sum of the slots' masses
  std::vector<Count> q_count_;     // sparse rows: the slots' table counts
  uint32_t row_slots_ = 0;         // sparse: the row's slots (then overlay's)
  bool cache_valid_ = false;       // reusable by the word's next token
  bool cache_dense_ = false;
  WordId cache_word_ = 0;
  uint32_t cache_size_ = 0;
  double cache_total_ = 0;
  // The word's tokens in the table, summed by a build whose word had no
  // overlay record (what the overlay's first Move of the word reads).
  int64_t row_tokens_ = 0;
  uint32_t num_dirty_ = 0;
  TopicId dirty_[kMaxDirty];
  // Sparse caches: dirty_[0, num_located_)'s slots in the cache (-1: none).
  uint32_t num_located_ = 0;
  int32_t dirty_row_slot_[kMaxDirty];
  int32_t dirty_moved_slot_[kMaxDirty];
  double dirty_fresh_[kMaxDirty];  // mass now
  double dirty_fresh_sum_ = 0;
  // The dirty topics' slots in the cache and the masses they hold there.
  uint32_t num_iv_ = 0;
  uint32_t iv_slot_[kMaxIntervals];
  double iv_mass_[kMaxIntervals];
};

// The plain O(K) conditional over dense scratch; exact reference. Sees its
// batch's own moves on n_wk like SparseLdaKernel if batch_overlay is set.
class DenseKernel final : public SamplingKernel {
 public:
  DenseKernel(TopicId num_topics, bool batch_overlay,
              int64_t overlay_max_word_tokens);
  void SampleBatch(const SweepParams& params, DocBatch* batch,
                   std::vector<TopicChange>* changes) override;

 private:
  const TopicId num_topics_;
  const bool use_overlay_;
  BatchOverlay overlay_;
  std::vector<int64_t> n_k_;
  std::vector<Count> n_dk_;
  std::vector<Count> n_wk_;
  std::vector<double> cumulative_;
};

// KernelKind::kSparseInit: token of word w -> topic
// Mix64(seed, w, j) mod K for j uniform in [0, row_topics).
class SparseInitKernel final : public SamplingKernel {
 public:
  SparseInitKernel(TopicId num_topics, uint32_t row_topics)
      : num_topics_(num_topics), row_topics_(row_topics) {}
  void SampleBatch(const SweepParams& params, DocBatch* batch,
                   std::vector<TopicChange>* changes) override;

 private:
  const TopicId num_topics_;
  const uint32_t row_topics_;
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_SPARSE_LDA_KERNEL_H_
