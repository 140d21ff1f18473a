#include "sampler/internal/progressive_start_kernel.h"

#include "base/random.h"
#include "sampler/internal/dense_row_masses.h"
#include "sampler/internal/row_masses.h"
#include "sampler/internal/sparse_buckets.h"
#include "sampler/internal/upper_bound.h"

namespace latentd::internal {

ProgressiveStartKernel::ProgressiveStartKernel(TopicId num_topics)
    : num_topics_(num_topics),
      overlay_(num_topics, /*max_word_tokens=*/0),
      n_k_(num_topics),
      inv_denom_(num_topics),
      coef_(num_topics),
      n_dk_(num_topics, 0),
      // A row shows each topic at most once (RowMasses may write
      // kRowMassesSlack past them), the overlay at most K more.
      q_topics_(2 * size_t{num_topics} + kRowMassesSlack),
      q_mass_(2 * size_t{num_topics} + kRowMassesSlack) {
  doc_topics_.reserve(num_topics);
}

void ProgressiveStartKernel::Add(TopicId k, double& s, double& r) {
  const double a = alpha_[k];
  const double old_inv = inv_denom_[k];
  const Count n_dk = ++n_dk_[k];
  ++n_k_[k];
  const double inv = 1.0 / (static_cast<double>(n_k_[k]) + beta_sum_);
  inv_denom_[k] = inv;
  const double ds = a * beta_ * (inv - old_inv);
  s += ds;
  smoothing_.Add(k, ds);
  r += beta_ * (n_dk * inv - (n_dk - 1) * old_inv);
  coef_[k] = (a + n_dk) * inv;
  if (n_dk == 1) doc_topics_.push_back(k);
}

void ProgressiveStartKernel::SampleBatch(const SweepParams& params,
                                         DocBatch* batch,
                                         std::vector<TopicChange>* changes) {
  if (params.progressive_stride > 1 &&
      (batch->index % params.progressive_stride == 0) !=
          params.progressive_first_stage) {
    return;  // the other stage's batch
  }
  const TopicTable& table = *params.table;
  alpha_ = params.alpha.data();
  beta_ = params.beta;
  beta_sum_ = params.beta_sum;
  // Streams apart from the sweep's that follows (same seed and sweep).
  Rng rng = Rng::ForStream(Mix64(params.seed ^ 0x9e0651e55ULL), params.sweep,
                           batch->index);
  overlay_.Reset(table.vocab_size());
  double s = LoadTopicTerms(table, alpha_, beta_, beta_sum_, n_k_.data(),
                            inv_denom_.data(), coef_.data(), &smoothing_);

  for (size_t d = 0; d < batch->num_docs(); ++d) {
    std::span<const WordId> words = batch->doc_words(d);
    std::span<TopicId> topics = batch->doc_topics(d);
    double r = 0;
    for (size_t i = 0; i < words.size(); ++i) {
      const WordId w = words[i];
      PrefetchRows(table, &overlay_, batch->words, batch->doc_offsets[d] + i);
      // q: the word's tokens placed so far, in the table (the batches
      // applied) and in the overlay (this batch's; every delta positive).
      overlay_.Focus(w);
      // A dense row's slot j is topic j (q_topics_ is not written for it).
      const TopicTable::RawRow row = table.Raw(w);
      uint32_t n;
      if (row.dense) {
        n = row.size;
        DenseRowMasses(row.counts, n, coef_.data(), kNoExcludedTopic,
                       q_mass_.data());
        RunningSum(q_mass_.data(), n);
      } else {
        int64_t row_tokens;
        n = RowMasses(row.entries, row.size, coef_.data(), kNoExcludedTopic,
                      {q_topics_.data(), q_mass_.data(), nullptr}, &row_tokens);
      }
      const uint32_t row_slots = row.dense ? n : 0;
      double q = n > 0 ? q_mass_[n - 1] : 0.0;
      overlay_.ForEachEntry([&](TopicId k, int32_t c) {
        q += c * coef_[k];
        q_topics_[n] = k;
        q_mass_[n++] = q;
      });

      double u = rng.Uniform() * (s + r + q);
      TopicId topic;
      if (u < q) {
        const uint32_t j = UpperBound(q_mass_.data(), n, u);
        topic = j < row_slots ? j : q_topics_[j];
      } else if ((u -= q) < r && !doc_topics_.empty()) {
        topic = DrawDocBucket(u, doc_topics_, n_dk_.data(), beta_,
                              inv_denom_.data());
      } else {
        topic = smoothing_.Draw(u - r, alpha_, beta_, inv_denom_.data());
      }
      Add(topic, s, r);
      overlay_.Move(kUncounted, topic, /*word_tokens=*/0);
      topics[i] = topic;
      changes->push_back({w, kUncounted, topic});
    }
    EndDocument(doc_topics_, n_dk_.data(), coef_.data(), alpha_,
                inv_denom_.data());
  }
}

}  // namespace latentd::internal
