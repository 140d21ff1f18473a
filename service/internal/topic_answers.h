// Helpers shared by the API's read calls on the topic model
// (TopicQueries, DocumentQueries): the limits they check and the ranked
// topics they answer with.
//
// Thread-safety: pure functions.
#ifndef LATENTD_SERVICE_INTERNAL_TOPIC_ANSWERS_H_
#define LATENTD_SERVICE_INTERNAL_TOPIC_ANSWERS_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "service/api.pb.h"
#include "service/model_view.h"

namespace latentd::service::internal {

constexpr uint32_t kMaxTopDocuments = 1000;

inline uint32_t OrDefault(uint32_t v, uint32_t def) { return v == 0 ? def : v; }

// The first `top_words` words of topic summary `t` into out's top_words.
template <typename Message>
void AddTopWords(const ModelView& v, const TopicSummary& t, uint32_t top_words,
                 Message* out) {
  const size_t n = std::min<size_t>(top_words, t.top_words.size());
  for (size_t i = 0; i < n; ++i) {
    api::WordWeight* w = out->add_top_words();
    const WordId id = t.top_words[i].first;
    w->set_word(id < v.vocab.size() ? v.vocab.word(id) : absl::StrCat("#", id));
    w->set_probability(t.top_words[i].second);
  }
}

inline void FillTopic(const ModelView& v, const TopicSummary& t,
                      uint32_t top_words, api::Topic* out) {
  out->set_id(t.topic);
  out->set_alpha(t.alpha);
  out->set_tokens(t.tokens);
  AddTopWords(v, t, top_words, out);
}

// The first `n` of `ranked` (topic, weight) into out's topics, each with
// its first `top_words` words.
template <typename Message>
void AddRankedTopics(const ModelView& v,
                     const std::vector<std::pair<uint32_t, double>>& ranked,
                     size_t n, uint32_t top_words, Message* out) {
  n = std::min(n, ranked.size());
  for (size_t i = 0; i < n; ++i) {
    api::TopicWeight* tw = out->add_topics();
    tw->set_topic(ranked[i].first);
    tw->set_weight(ranked[i].second);
    AddTopWords(v, v.topics[ranked[i].first], top_words, tw);
  }
}

inline absl::Status CheckTopWords(uint32_t n) {
  if (n > static_cast<uint32_t>(ModelView::kMaxTopWords)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "top_words ", n, " is over the limit of ", ModelView::kMaxTopWords));
  }
  return absl::OkStatus();
}

// Topic weights sorted by decreasing weight, ties by topic id.
inline std::vector<std::pair<uint32_t, double>> Ranked(
    const std::vector<double>& w) {
  std::vector<std::pair<uint32_t, double>> r;
  r.reserve(w.size());
  for (uint32_t k = 0; k < w.size(); ++k) r.emplace_back(k, w[k]);
  std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) {
    return a.second > b.second;
  });
  return r;
}

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_TOPIC_ANSWERS_H_
