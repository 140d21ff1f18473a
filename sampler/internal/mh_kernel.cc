#include "sampler/internal/mh_kernel.h"

#include <algorithm>

#include "sync/row_topic_sort.h"

namespace latentd::internal {
namespace {

// How many tokens ahead the kernel prefetches a word's cache header.
constexpr size_t kPrefetch = 4;

inline uint64_t IndexHash(TopicId topic) {
  return (uint64_t{topic} * 0x9E3779B97F4A7C15ULL) >> 40;
}

}  // namespace

MhKernel::MhKernel(TopicId num_topics, const MhOptions& options)
    : num_topics_(num_topics),
      options_(options),
      n_k_(num_topics),
      smooth_(num_topics),
      doc_counts_(num_topics, 0) {}

void MhKernel::Build(const TopicTable& table, WordId word, WordCache* c) {
  row_.clear();
  table.ForEachNonZero(word, [&](TopicId k, Count n) {
    row_.push_back({k, n});
  });
  c->dense = row_.size() * 4 > num_topics_;
  if (c->dense) {
    c->slots.assign(num_topics_, Slot{});
    for (TopicId k = 0; k < num_topics_; ++k) c->slots[k].topic = k;
    for (const auto& [k, n] : row_) c->slots[k].count = n;
  } else {
    c->slots.resize(row_.size());
    size_t capacity = 2;
    while (capacity < 2 * row_.size()) capacity *= 2;
    c->index.assign(capacity, 0);
    for (size_t j = 0; j < row_.size(); ++j) {
      const TopicId k = row_[j].first;
      c->slots[j] = {k, row_[j].second, 0.0};
      uint64_t h = IndexHash(k) & (capacity - 1);
      while (c->index[h] != 0) h = (h + 1) & (capacity - 1);
      c->index[h] = (uint64_t{k} + 1) << 32 | j;
    }
  }
  c->mass = 0;
  masses_.resize(c->slots.size());
  for (size_t j = 0; j < c->slots.size(); ++j) {
    Slot& slot = c->slots[j];
    slot.mass =
        slot.count / (static_cast<double>(n_k_[slot.topic]) + beta_sum_);
    masses_[j] = slot.mass;
    c->mass += slot.mass;
  }
  if (c->mass > 0) c->alias.Build(masses_);
  c->draws_left = static_cast<int64_t>(
      std::max(1.0, options_.refresh * static_cast<double>(c->slots.size())));
  c->epoch = epoch_;
}

MhKernel::WordCache& MhKernel::CacheFor(const TopicTable& table, WordId word) {
  WordCache& c = words_[word];
  if (c.epoch != epoch_ || c.draws_left <= 0) Build(table, word, &c);
  return c;
}

const MhKernel::Slot* MhKernel::SlotOf(const WordCache& c, TopicId topic) {
  if (c.dense) return &c.slots[topic];
  // Open addressing, linear probing; the table is at most half full.
  const uint64_t mask = c.index.size() - 1;
  for (uint64_t h = IndexHash(topic) & mask;; h = (h + 1) & mask) {
    const uint64_t e = c.index[h];
    if (e == 0) return nullptr;
    if ((e >> 32) == uint64_t{topic} + 1) return &c.slots[e & 0xffffffffu];
  }
}

TopicId MhKernel::Resample(const WordCache& c, TopicId s0,
                           std::span<const TopicId> topics, size_t position,
                           Rng* rng) {
  // The snapshot, the proposal's denominators and the batch-start totals
  // all count this token at s0. Both proposals below exclude it, so that
  // neither depends on the token's topic: each move is then an
  // independence sampler whose stationary law is the target, whatever
  // state the chain is in (the kernel tests check one move on its own).
  //
  // Word proposal r(k): the alias mixture a(k) = m(k) + b(k) everywhere
  // but at s0, where the token's count comes out of the row's mass, its
  // denominator and the smoothing term's.
  const Slot* at_s0 = SlotOf(c, s0);
  const Count n0 = at_s0 == nullptr ? 0 : at_s0->count;
  const double m0 = at_s0 == nullptr ? 0.0 : at_s0->mass;
  const double a0 = m0 + smooth_[s0];
  double r0 = a0;  // no correction if the snapshot lacks the token
  if (n0 > 0 && m0 > 0) {
    const double denom = n0 / m0;  // n̂_s0 + Vβ at the build
    const double smooth_denom = beta_ / smooth_[s0];
    r0 = (n0 - 1) / std::max(denom - 1, beta_sum_) +
         beta_ / std::max(smooth_denom - 1, beta_sum_);
  }
  // Draws from r by rejection from a: r <= bound·a everywhere.
  const double bound = std::max(1.0, r0 / a0);
  auto count_and_r = [&](TopicId k, Count* n, double* r) {
    if (k == s0) {
      *n = std::max<Count>(n0 - 1, 0);
      *r = r0;
      return;
    }
    const Slot* slot = SlotOf(c, k);
    *n = slot == nullptr ? 0 : slot->count;
    *r = (slot == nullptr ? 0.0 : slot->mass) + smooth_[k];
  };
  TopicId s = s0;
  Count n_s;
  double r_s;
  count_and_r(s, &n_s, &r_s);
  double p_s = Target(s, n_s);
  const double word_total = c.mass + smooth_mass_;
  // Document proposal q(k) ∝ n_dk + α_k (n_dk without the token): one of
  // the other L−1 tokens' topics, or an α-weighted topic.
  const uint64_t others = topics.size() - 1;
  const double doc_total = static_cast<double>(others) + alpha_sum_;
  for (int step = 0; step < options_.steps; ++step) {
    TopicId t;
    Count n_t;
    double r_t;
    while (true) {
      if (rng->Uniform() * word_total < c.mass) {
        const Slot& slot = c.slots[c.alias.Draw(rng)];
        t = slot.topic;
        n_t = slot.count;
        r_t = slot.mass + smooth_[t];
      } else {
        t = smooth_alias_.Draw(rng);
        count_and_r(t, &n_t, &r_t);
      }
      if (t == s0) {
        n_t = std::max<Count>(n0 - 1, 0);
        r_t = r0;
        if (rng->Uniform() * bound * a0 < r0) break;
      } else if (bound == 1.0 || rng->Uniform() * bound < 1.0) {
        break;
      }
    }
    if (t != s) {
      const double p_t = Target(t, n_t);
      if (rng->Uniform() * p_s * r_t < p_t * r_s) {
        s = t;
        p_s = p_t;
        n_s = n_t;
        r_s = r_t;
      }
    }
    if (rng->Uniform() * doc_total < static_cast<double>(others)) {
      uint64_t j = rng->UniformInt(others);
      j += j >= position;  // skip the token itself
      t = topics[j];
    } else {
      t = alpha_alias_.Draw(rng);
    }
    if (t != s) {
      count_and_r(t, &n_t, &r_t);
      const double p_t = Target(t, n_t);
      const double q_s = n_dk_[s] + alpha_[s], q_t = n_dk_[t] + alpha_[t];
      if (rng->Uniform() * p_s * q_t < p_t * q_s) {
        s = t;
        p_s = p_t;
        n_s = n_t;
        r_s = r_t;
      }
    }
  }
  return s;
}

void MhKernel::SampleBatch(const SweepParams& params, DocBatch* batch,
                           std::vector<TopicChange>* changes) {
  const TopicTable& table = *params.table;
  epoch_ = params.run + 1;  // caches of an earlier Run are stale
  if (words_.size() < table.vocab_size()) words_.resize(table.vocab_size());
  alpha_ = params.alpha.data();
  beta_ = params.beta;
  beta_sum_ = params.beta_sum;
  alpha_sum_ = 0;
  smooth_mass_ = 0;
  for (TopicId k = 0; k < num_topics_; ++k) {
    n_k_[k] = table.TopicTotal(k);
    smooth_[k] = beta_ / (static_cast<double>(n_k_[k]) + beta_sum_);
    smooth_mass_ += smooth_[k];
    alpha_sum_ += alpha_[k];
  }
  smooth_alias_.Build(smooth_);
  alpha_alias_.Build(params.alpha);
  Rng rng = Rng::ForStream(params.seed, params.sweep, batch->index);
  if (options_.word_order &&
      batch->num_docs() * num_topics_ <= kMaxWordOrderDocCounts) {
    SampleByWord(table, batch, &rng, changes);
  } else {
    SampleByDocument(table, batch, &rng, changes);
  }
}

void MhKernel::ResampleToken(const TopicTable& table, WordId word,
                             std::span<TopicId> topics, size_t position,
                             Rng* rng, std::vector<TopicChange>* changes) {
  const TopicId s0 = topics[position];
  WordCache& c = CacheFor(table, word);
  --n_dk_[s0];
  n_k_[s0] = std::max<int64_t>(n_k_[s0] - 1, 0);
  const TopicId s = Resample(c, s0, topics, position, rng);
  c.draws_left -= options_.steps;
  ++n_dk_[s];
  ++n_k_[s];
  if (s != s0) {
    topics[position] = s;
    changes->push_back({word, s0, s});
  }
}

void MhKernel::SampleByDocument(const TopicTable& table, DocBatch* batch,
                                Rng* rng, std::vector<TopicChange>* changes) {
  n_dk_ = doc_counts_.data();
  for (size_t d = 0; d < batch->num_docs(); ++d) {
    std::span<const WordId> words = batch->doc_words(d);
    std::span<TopicId> topics = batch->doc_topics(d);
    for (TopicId t : topics) ++n_dk_[t];
    for (size_t i = 0; i < words.size(); ++i) {
      if (i + kPrefetch < words.size()) {
        __builtin_prefetch(&words_[words[i + kPrefetch]]);
      }
      ResampleToken(table, words[i], topics, i, rng, changes);
    }
    for (TopicId t : topics) n_dk_[t] = 0;
  }
}

namespace {

constexpr auto ByWord = [](const auto& v) { return v.word; };

}  // namespace

void MhKernel::SampleByWord(const TopicTable& table, DocBatch* batch, Rng* rng,
                            std::vector<TopicChange>* changes) {
  const size_t K = num_topics_;
  const size_t docs = batch->num_docs();
  if (doc_counts_.size() < docs * K) doc_counts_.resize(docs * K, 0);
  doc_of_.resize(batch->num_tokens());
  visits_.clear();
  for (size_t d = 0; d < docs; ++d) {
    Count* counts = doc_counts_.data() + d * K;
    for (uint32_t t = batch->doc_offsets[d]; t < batch->doc_offsets[d + 1];
         ++t) {
      ++counts[batch->topics[t]];
      doc_of_[t] = static_cast<uint32_t>(d);
      visits_.push_back({batch->words[t], 0, t});
    }
  }
  sync::SortByRowTopic(1, ByWord, &visits_, &visits_scratch_);
  for (size_t v = 0; v < visits_.size(); ++v) {
    if (v + kPrefetch < visits_.size()) {
      __builtin_prefetch(&words_[visits_[v + kPrefetch].word]);
    }
    const uint32_t token = visits_[v].token;
    const uint32_t d = doc_of_[token];
    const uint32_t begin = batch->doc_offsets[d];
    n_dk_ = doc_counts_.data() + size_t{d} * K;
    ResampleToken(table, visits_[v].word,
                  {batch->topics.data() + begin, batch->doc_length(d)},
                  token - begin, rng, changes);
  }
  for (size_t d = 0; d < docs; ++d) {
    for (TopicId t : batch->doc_topics(d)) doc_counts_[d * K + t] = 0;
  }
}

}  // namespace latentd::internal
