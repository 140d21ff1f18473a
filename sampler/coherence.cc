#include "sampler/coherence.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sampler/model_export.h"

namespace latentd {
namespace {

// Bouma's NPMI from document counts, with his limits for the undefined
// cases (header comment).
double Npmi(uint64_t joint, uint64_t a, uint64_t b, uint64_t n) {
  if (joint == 0) return -1.0;
  if (joint == n) return 1.0;
  const double p_joint = static_cast<double>(joint) / n;
  const double pmi = std::log(
      p_joint / ((static_cast<double>(a) / n) * (static_cast<double>(b) / n)));
  return pmi / -std::log(p_joint);
}

// gensim's ε (gensim/topic_coherence/direct_confirmation_measure.py).
constexpr double kGensimEpsilon = 1e-12;

// gensim's log_conditional_probability of one pair; 0 where D(v_l) = 0.
double GensimUmass(uint64_t joint, uint64_t d_earlier, uint64_t n) {
  if (d_earlier == 0) return 0.0;
  const double nd = static_cast<double>(n);
  return std::log((joint / nd + kGensimEpsilon) / (d_earlier / nd));
}

// gensim's normalized log_ratio_measure of one pair. REQUIRES: a, b > 0.
double GensimNpmi(uint64_t joint, uint64_t a, uint64_t b, uint64_t n) {
  const double nd = static_cast<double>(n);
  const double p_joint = joint / nd + kGensimEpsilon;
  return std::log(p_joint / ((a / nd) * (b / nd))) / -std::log(p_joint);
}

std::optional<double> MeanOf(const std::vector<TopicCoherence>& topics,
                             std::optional<double> TopicCoherence::*field) {
  double sum = 0;
  int n = 0;
  for (const TopicCoherence& t : topics) {
    if ((t.*field).has_value()) {
      sum += *(t.*field);
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace

absl::StatusOr<CoherenceConvention> ParseCoherenceConvention(
    std::string_view text) {
  if (text == "mimno") return CoherenceConvention::kMimno;
  if (text == "gensim") return CoherenceConvention::kGensim;
  return absl::InvalidArgumentError(absl::StrCat(
      "coherence convention '", absl::string_view(text.data(), text.size()),
      "': expected mimno or gensim"));
}

const char* CoherenceConventionName(CoherenceConvention c) {
  return c == CoherenceConvention::kGensim ? "gensim" : "mimno";
}

CoherenceCounter::CoherenceCounter(std::vector<std::vector<WordId>> words,
                                   uint32_t vocab_size, int top_words,
                                   CoherenceConvention convention)
    : words_(std::move(words)),
      top_words_(top_words),
      convention_(convention),
      slot_(vocab_size, -1) {
  pair_counts_.resize(words_.size());
  for (TopicId k = 0; k < words_.size(); ++k) {
    const size_t m = words_[k].size();
    pair_counts_[k].assign(m * m, 0);
    for (size_t r = 0; r < m; ++r) {
      const WordId w = words_[k][r];
      if (slot_[w] < 0) {
        slot_[w] = static_cast<int32_t>(places_.size());
        places_.emplace_back();
      }
      places_[slot_[w]].emplace_back(k, static_cast<int>(r));
    }
  }
  doc_freq_.assign(places_.size(), 0);
  ranks_present_.resize(words_.size());
  seen_in_doc_.assign(places_.size(), 0);
}

void CoherenceCounter::AddDocument(std::span<const WordId> document) {
  ++documents_;
  if (++stamp_ == 0) {  // wrapped: forget every old stamp
    std::fill(seen_in_doc_.begin(), seen_in_doc_.end(), 0);
    stamp_ = 1;
  }
  present_.clear();
  for (WordId w : document) {
    if (w >= slot_.size() || slot_[w] < 0) continue;
    const int32_t s = slot_[w];
    if (seen_in_doc_[s] == stamp_) continue;
    seen_in_doc_[s] = stamp_;
    ++doc_freq_[s];
    present_.push_back(s);
  }
  // Every pair of present words that share a topic, topic by topic: the
  // present words' ranks grouped by topic first, so that the cost is the
  // present words' places plus the pairs counted (a word in the top words
  // of thousands of topics is not paired with every other such word).
  touched_.clear();
  for (const int32_t s : present_) {
    for (const auto& [k, r] : places_[s]) {
      if (ranks_present_[k].empty()) touched_.push_back(k);
      ranks_present_[k].push_back(r);
    }
  }
  for (const TopicId k : touched_) {
    std::vector<int>& ranks = ranks_present_[k];
    const size_t m = words_[k].size();
    for (size_t i = 0; i < ranks.size(); ++i) {
      for (size_t j = i + 1; j < ranks.size(); ++j) {
        pair_counts_[k][std::min(ranks[i], ranks[j]) * m +
                        std::max(ranks[i], ranks[j])]++;
      }
    }
    ranks.clear();
  }
}

CoherenceReport CoherenceCounter::Report() const {
  CoherenceReport report;
  report.documents = documents_;
  report.top_words = top_words_;
  report.convention = convention_;
  const bool gensim = convention_ == CoherenceConvention::kGensim;
  const uint64_t n = documents_;
  for (TopicId k = 0; k < words_.size(); ++k) {
    TopicCoherence t;
    t.topic = k;
    t.words = words_[k];
    const size_t m = t.words.size();
    double umass = 0, npmi = 0;
    int umass_pairs = 0, npmi_pairs = 0;
    for (size_t later = 1; later < m; ++later) {
      for (size_t earlier = 0; earlier < later; ++earlier) {
        const uint64_t joint = pair_counts_[k][earlier * m + later];
        const uint64_t d_earlier = doc_freq_[slot_[t.words[earlier]]];
        const uint64_t d_later = doc_freq_[slot_[t.words[later]]];
        if (gensim) {
          umass += GensimUmass(joint, d_earlier, n);
          ++umass_pairs;
          if (d_earlier > 0 && d_later > 0) {
            npmi += GensimNpmi(joint, d_earlier, d_later, n);
            ++npmi_pairs;
          }
          continue;
        }
        if (d_earlier > 0) {
          umass += std::log((joint + 1.0) / static_cast<double>(d_earlier));
          ++umass_pairs;
        }
        npmi += Npmi(joint, d_earlier, d_later, n);
        ++npmi_pairs;
      }
    }
    if (umass_pairs > 0) t.umass = umass / umass_pairs;
    if (npmi_pairs > 0) t.npmi = npmi / npmi_pairs;
    report.topics.push_back(std::move(t));
  }
  report.mean_umass = MeanOf(report.topics, &TopicCoherence::umass);
  report.mean_npmi = MeanOf(report.topics, &TopicCoherence::npmi);
  return report;
}

std::vector<std::vector<WordId>> TopicTopWords(const ModelRows& model,
                                               int top_words) {
  std::vector<std::vector<WordId>> out;
  for (const TopicSummary& t : SummarizeTopics(model, top_words)) {
    out.emplace_back();
    for (const auto& [w, p] : t.top_words) out.back().push_back(w);
  }
  return out;
}

absl::StatusOr<CoherenceReport> StoreCoherence(
    const ModelRows& model, TokenStore* store,
    const CoherenceOptions& options) {
  if (options.top_words < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("coherence needs at least 2 top words per topic, got ",
                     options.top_words));
  }
  CoherenceCounter counter(TopicTopWords(model, options.top_words),
                           model.vocab_size(), options.top_words,
                           options.convention);
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        counter.AddDocument(batch.doc_words(d));
      }));
  return counter.Report();
}

}  // namespace latentd
