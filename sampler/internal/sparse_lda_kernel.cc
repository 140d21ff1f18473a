#include "sampler/internal/sparse_lda_kernel.h"

#include <algorithm>

#include "base/random.h"
#include "sampler/internal/dense_row_masses.h"
#include "sampler/internal/row_masses.h"
#include "sampler/internal/row_search.h"
#include "sampler/internal/sparse_buckets.h"
#include "sampler/internal/upper_bound.h"

namespace latentd::internal {

SparseLdaKernel::SparseLdaKernel(TopicId num_topics, bool batch_overlay,
                                 int64_t overlay_max_word_tokens)
    : num_topics_(num_topics),
      use_overlay_(batch_overlay),
      overlay_(num_topics, overlay_max_word_tokens),
      n_k_(num_topics),
      inv_denom_(num_topics),
      coef_(num_topics),
      n_dk_(num_topics, 0),
      doc_pos_(num_topics),
      // A sparse row's walk fills at most K slots (RowMasses may write
      // kRowMassesSlack past them), the overlay's positive deltas at most K
      // more.
      q_topics_(2 * size_t{num_topics} + kRowMassesSlack),
      q_mass_(2 * size_t{num_topics} + kRowMassesSlack),
      q_count_(2 * size_t{num_topics} + kRowMassesSlack) {
  doc_topics_.reserve(num_topics);
}

void SparseLdaKernel::MoveCount(TopicId k, int by, double& s, double& r) {
  const double a = alpha_[k];
  const double old_inv = inv_denom_[k];
  const Count old_n_dk = n_dk_[k];
  const Count n_dk = old_n_dk + by;
  n_dk_[k] = n_dk;
  n_k_[k] = std::max<int64_t>(n_k_[k] + by, 0);
  const double inv = 1.0 / (static_cast<double>(n_k_[k]) + beta_sum_);
  inv_denom_[k] = inv;
  const double ds = a * beta_ * (inv - old_inv);
  s += ds;
  smoothing_.Add(k, ds);
  r += beta_ * (n_dk * inv - old_n_dk * old_inv);
  coef_[k] = (a + n_dk) * inv;
  if (by < 0 && n_dk == 0) {
    const uint32_t pos = doc_pos_[k];
    const TopicId last = doc_topics_.back();
    doc_topics_[pos] = last;
    doc_pos_[last] = pos;
    doc_topics_.pop_back();
  } else if (by > 0 && n_dk == 1) {
    doc_pos_[k] = static_cast<uint32_t>(doc_topics_.size());
    doc_topics_.push_back(k);
  }
}

bool SparseLdaKernel::MarkDirty(TopicId topic) {
  for (uint32_t j = 0; j < num_dirty_; ++j) {
    if (dirty_[j] == topic) return true;
  }
  if (num_dirty_ == kMaxDirty) return false;
  dirty_[num_dirty_++] = topic;
  return true;
}

void SparseLdaKernel::BuildWordCache(const TopicTable& table, WordId word,
                                     TopicId excluded) {
  // A sparse row keeps its slots with a positive count (RowMasses, or the
  // branch-free loop below when the overlay adds to it: every slot is
  // written, the output advances past it only if its count is positive). A
  // dense row is kept whole instead (slot = topic; a zero-mass slot is
  // never the result of a binary search), which is what lets the next
  // tokens of the word reuse it.
  uint32_t n = 0;
  // A row seen dense stays dense while samplers run, so the dense loop's
  // slot i is topic i; a row turning dense meanwhile is read as sparse.
  const TopicTable::RawRow row = table.Raw(word);
  cache_dense_ = row.dense;
  if (use_overlay_) overlay_.Focus(word);
  double q = 0;
  // The batch's own moves of the word, if any (the overlay is focused on
  // it): the loops below are copies with and without them, since the
  // common case (the word's first token in the batch) needs none.
  const bool moved = !overlay_.empty();
  if (cache_dense_) {
    // Masses first, then their running sum (RunningSum): the dense loop
    // is long and the sum's dependency chain was its bottleneck. A dense
    // row shows each topic once, so the overlay adds in place.
    if (moved) {
      const int32_t* ov = overlay_.ScatteredDeltas();
      table.ForEachSlot(word, [&](TopicId k, Count c) {
        c += ov[k] - (k == excluded);
        q_mass_[n++] = (c > 0 ? c : 0) * coef_[k];
      });
    } else {
      // The token itself is excluded.
      n = row.size;
      row_tokens_ =
          DenseRowMasses(row.counts, n, coef_.data(), excluded, q_mass_.data());
    }
    q = RunningSum(q_mass_.data(), n);
  } else {
    // A sparse row may show a topic in zero-count holes besides its
    // count, so only what a clamp at zero keeps exact is applied in the
    // walk: the exclusion and the overlay's negative deltas. Its positive
    // deltas become slots of their own after the row's.
    if (moved) {
      const int32_t* ov = overlay_.ScatteredDeltas();
      table.ForEachSlot(word, [&](TopicId k, Count c) {
        const Count x = c + std::min(ov[k], 0) - (k == excluded);
        q += (x > 0 ? x : 0) * coef_[k];
        q_topics_[n] = k;
        q_mass_[n] = q;
        q_count_[n] = c;
        n += (c > 0);
      });
      row_slots_ = n;
      overlay_.ForEachEntry([&](TopicId k, int32_t d) {
        q += (d > 0 ? d : 0) * coef_[k];
        q_topics_[n] = k;
        q_mass_[n] = q;
        q_count_[n] = 0;
        n += (d > 0);
      });
    } else {
      n = RowMasses(row.entries, row.size, coef_.data(), excluded,
                    {q_topics_.data(), q_mass_.data(), q_count_.data()},
                    &row_tokens_);
      q = n > 0 ? q_mass_[n - 1] : 0.0;
      row_slots_ = n;
    }
  }
  cache_word_ = word;
  cache_size_ = n;
  cache_total_ = q;
  // Reusing a sparse cache costs a search of its slots for each changed
  // topic and a few intervals: a short row is cheaper built again.
  cache_valid_ = cache_dense_ || n >= kMinReusedSlots;
  num_located_ = 0;
  num_dirty_ = 0;
  dirty_[num_dirty_++] = excluded;
}

void SparseLdaKernel::LocateDirty() {
  const TopicId* moved_topics = q_topics_.data() + row_slots_;
  const uint32_t moved_slots = cache_size_ - row_slots_;
  for (; num_located_ < num_dirty_; ++num_located_) {
    const TopicId k = dirty_[num_located_];
    dirty_row_slot_[num_located_] = kFindTopic(q_topics_.data(), row_slots_, k);
    const int32_t moved = kFindTopic(moved_topics, moved_slots, k);
    dirty_moved_slot_[num_located_] =
        moved < 0 ? -1 : static_cast<int32_t>(row_slots_) + moved;
  }
}

void SparseLdaKernel::AddInterval(uint32_t slot) {
  iv_slot_[num_iv_] = slot;
  iv_mass_[num_iv_++] = q_mass_[slot] - (slot > 0 ? q_mass_[slot - 1] : 0.0);
}

double SparseLdaKernel::ReusedMass(const TopicTable& table, TopicId excluded) {
  if (!cache_dense_) LocateDirty();
  dirty_fresh_sum_ = 0;
  num_iv_ = 0;
  for (uint32_t j = 0; j < num_dirty_; ++j) {
    const TopicId k = dirty_[j];
    Count table_count;
    if (cache_dense_) {
      table_count = table.Get(cache_word_, k);
      AddInterval(k);
    } else {
      // The table's count as the build read it (the row's slot, if the
      // topic had one), and the topic's intervals: its row slot and the
      // slot of a positive overlay delta.
      const int32_t row = dirty_row_slot_[j];
      const int32_t moved = dirty_moved_slot_[j];
      table_count = row >= 0 ? q_count_[row] : 0;
      if (row >= 0) AddInterval(static_cast<uint32_t>(row));
      if (moved >= 0) AddInterval(static_cast<uint32_t>(moved));
    }
    const Count c = table_count + overlay_.Delta(k) - (k == excluded);
    dirty_fresh_[j] = (c > 0 ? c : 0) * coef_[k];
    dirty_fresh_sum_ += dirty_fresh_[j];
  }
  double built = 0;
  for (uint32_t m = 0; m < num_iv_; ++m) built += iv_mass_[m];
  return std::max(cache_total_ - built, 0.0) + dirty_fresh_sum_;
}

TopicId SparseLdaKernel::DrawFromCache(double u) const {
  const uint32_t j = UpperBound(q_mass_.data(), cache_size_, u);
  return cache_dense_ ? j : q_topics_[j];
}

TopicId SparseLdaKernel::DrawReused(double u, const TopicTable& table,
                                    TopicId excluded, Rng* rng) {
  if (u < dirty_fresh_sum_) {
    for (uint32_t j = 0; j < num_dirty_; ++j) {
      u -= dirty_fresh_[j];
      if (u < 0) return dirty_[j];
    }
    return dirty_[num_dirty_ - 1];
  }
  // The rest of the mass is the cached row minus the dirty topics' old
  // intervals: map u onto the cached running sum, skipping those intervals
  // in ascending order of their slots.
  u -= dirty_fresh_sum_;
  uint32_t order[kMaxIntervals];
  for (uint32_t m = 0; m < num_iv_; ++m) {
    uint32_t at = m;
    for (; at > 0 && iv_slot_[order[at - 1]] > iv_slot_[m]; --at) {
      order[at] = order[at - 1];
    }
    order[at] = m;
  }
  for (uint32_t m = 0; m < num_iv_; ++m) {
    const uint32_t slot = iv_slot_[order[m]];
    if (u < (slot > 0 ? q_mass_[slot - 1] : 0.0)) break;
    u += iv_mass_[order[m]];
  }
  bool exact = u < cache_total_;
  const uint32_t j = UpperBound(q_mass_.data(), cache_size_, u);
  for (uint32_t m = 0; m < num_iv_; ++m) exact &= iv_slot_[m] != j;
  if (!exact) {
    // Rounding put u on a dirty interval's edge or past the end: draw
    // again from a fresh row, which is exact.
    BuildWordCache(table, cache_word_, excluded);
    return DrawFromCache(rng->Uniform() * cache_total_);
  }
  return cache_dense_ ? j : q_topics_[j];
}

void SparseLdaKernel::SampleBatch(const SweepParams& params, DocBatch* batch,
                                  std::vector<TopicChange>* changes) {
  const TopicTable& table = *params.table;
  alpha_ = params.alpha.data();
  beta_ = params.beta;
  beta_sum_ = params.beta_sum;
  Rng rng = Rng::ForStream(params.seed, params.sweep, batch->index);
  if (use_overlay_) {
    overlay_.Reset(table.vocab_size(), params.overlay_max_word_tokens);
  }

  // The smoothing and document buckets live in locals (registers) across
  // the token loop; MoveCount keeps them current.
  double s = LoadTopicTerms(table, alpha_, beta_, beta_sum_, n_k_.data(),
                            inv_denom_.data(), coef_.data(), &smoothing_);
  double r = 0;

  for (size_t d = 0; d < batch->num_docs(); ++d) {
    std::span<const WordId> words = batch->doc_words(d);
    std::span<TopicId> topics = batch->doc_topics(d);
    r = 0;
    for (TopicId t : topics) {
      if (n_dk_[t]++ == 0) {
        doc_pos_[t] = static_cast<uint32_t>(doc_topics_.size());
        doc_topics_.push_back(t);
      }
    }
    for (TopicId k : doc_topics_) {
      r += n_dk_[k] * beta_ * inv_denom_[k];
      coef_[k] = (alpha_[k] + n_dk_[k]) * inv_denom_[k];
    }

    cache_valid_ = false;  // coefficients differ from document to document
    for (size_t i = 0; i < words.size(); ++i) {
      const WordId w = words[i];
      const TopicId old_topic = topics[i];
      PrefetchRows(table, use_overlay_ ? &overlay_ : nullptr, batch->words,
                   batch->doc_offsets[d] + i);
      MoveCount(old_topic, -1, s, r);

      const bool reuse =
          cache_valid_ && w == cache_word_ && MarkDirty(old_topic);
      double q;
      if (reuse) {
        q = ReusedMass(table, old_topic);
      } else {
        BuildWordCache(table, w, old_topic);
        q = cache_total_;
      }

      double u = rng.Uniform() * (s + r + q);
      TopicId new_topic;
      if (u < q) {
        new_topic =
            reuse ? DrawReused(u, table, old_topic, &rng) : DrawFromCache(u);
      } else if ((u -= q) < r && !doc_topics_.empty()) {
        new_topic = DrawDocBucket(u, doc_topics_, n_dk_.data(), beta_,
                                  inv_denom_.data());
      } else {
        new_topic = smoothing_.Draw(u - r, alpha_, beta_, inv_denom_.data());
      }

      MoveCount(new_topic, +1, s, r);
      if (!MarkDirty(new_topic)) cache_valid_ = false;
      if (new_topic != old_topic) {
        topics[i] = new_topic;
        changes->push_back({w, old_topic, new_topic});
        if (use_overlay_) overlay_.Move(old_topic, new_topic, row_tokens_);
      }
    }

    EndDocument(doc_topics_, n_dk_.data(), coef_.data(), alpha_,
                inv_denom_.data());
  }
}

DenseKernel::DenseKernel(TopicId num_topics, bool batch_overlay,
                         int64_t overlay_max_word_tokens)
    : num_topics_(num_topics),
      use_overlay_(batch_overlay),
      overlay_(num_topics, overlay_max_word_tokens),
      n_k_(num_topics),
      n_dk_(num_topics),
      n_wk_(num_topics),
      cumulative_(num_topics) {}

void DenseKernel::SampleBatch(const SweepParams& params, DocBatch* batch,
                              std::vector<TopicChange>* changes) {
  const TopicTable& table = *params.table;
  const double* alpha = params.alpha.data();
  Rng rng = Rng::ForStream(params.seed, params.sweep, batch->index);
  for (TopicId k = 0; k < num_topics_; ++k) n_k_[k] = table.TopicTotal(k);
  if (use_overlay_) {
    overlay_.Reset(table.vocab_size(), params.overlay_max_word_tokens);
  }

  for (size_t d = 0; d < batch->num_docs(); ++d) {
    std::span<const WordId> words = batch->doc_words(d);
    std::span<TopicId> topics = batch->doc_topics(d);
    std::fill(n_dk_.begin(), n_dk_.end(), 0);
    for (TopicId t : topics) ++n_dk_[t];
    for (size_t i = 0; i < words.size(); ++i) {
      const TopicId old_topic = topics[i];
      std::fill(n_wk_.begin(), n_wk_.end(), 0);
      int64_t word_tokens = 0;
      table.ForEachNonZero(words[i], [&](TopicId k, Count c) {
        n_wk_[k] = c;
        word_tokens += c;
      });
      if (use_overlay_) {
        overlay_.Focus(words[i]);
        overlay_.ForEachEntry([&](TopicId k, int32_t d) { n_wk_[k] += d; });
      }
      --n_wk_[old_topic];
      --n_dk_[old_topic];
      n_k_[old_topic] = std::max<int64_t>(n_k_[old_topic] - 1, 0);
      double total = 0;
      for (TopicId k = 0; k < num_topics_; ++k) {
        total += (n_dk_[k] + alpha[k]) * (std::max(n_wk_[k], 0) + params.beta) /
                 (static_cast<double>(n_k_[k]) + params.beta_sum);
        cumulative_[k] = total;
      }
      const double u = rng.Uniform() * total;
      const TopicId new_topic = static_cast<TopicId>(std::min<size_t>(
          std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
              cumulative_.begin(),
          num_topics_ - 1));
      ++n_dk_[new_topic];
      ++n_k_[new_topic];
      if (new_topic != old_topic) {
        topics[i] = new_topic;
        changes->push_back({words[i], old_topic, new_topic});
        if (use_overlay_) overlay_.Move(old_topic, new_topic, word_tokens);
      }
    }
  }
}

void SparseInitKernel::SampleBatch(const SweepParams& params, DocBatch* batch,
                                   std::vector<TopicChange>* changes) {
  // Streams apart from the sweep's that follows (same seed and sweep).
  const uint64_t word_seed = Mix64(params.seed ^ 0x5eed5eedULL);
  Rng rng = Rng::ForStream(word_seed, params.sweep, batch->index);
  for (size_t i = 0; i < batch->num_tokens(); ++i) {
    const WordId w = batch->words[i];
    const uint64_t j = rng.UniformInt(row_topics_);
    const TopicId t = static_cast<TopicId>(
        Mix64(word_seed ^ (uint64_t{w} << 20 | j)) % num_topics_);
    if (t != batch->topics[i]) {
      changes->push_back({w, batch->topics[i], t});
      batch->topics[i] = t;
    }
  }
}

}  // namespace latentd::internal
