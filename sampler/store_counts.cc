#include "sampler/store_counts.h"

#include <algorithm>
#include <utility>

#include "base/status_macros.h"

namespace latentd {

absl::StatusOr<std::vector<WordTopicDelta>> StoreCounts(TokenStore* store,
                                                        int sign,
                                                        uint64_t* documents) {
  std::vector<std::pair<WordId, TopicId>> tokens;
  uint64_t docs = 0;
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        auto words = batch.doc_words(d);
        auto topics = batch.doc_topics(d);
        for (size_t i = 0; i < words.size(); ++i) {
          tokens.emplace_back(words[i], topics[i]);
        }
        ++docs;
      }));
  // 8 bytes a token, sorted in place: this holds a whole store at once
  // (a node's hand-off), so not the pipeline's DeltaCombiner, which needs
  // about 36 bytes a token and suits a batch.
  std::sort(tokens.begin(), tokens.end());
  std::vector<WordTopicDelta> out;
  for (const auto& [w, k] : tokens) {
    if (!out.empty() && out.back().word == w && out.back().topic == k) {
      out.back().delta += sign;
    } else {
      out.push_back({w, k, sign});
    }
  }
  if (documents != nullptr) *documents = docs;
  return out;
}

}  // namespace latentd
