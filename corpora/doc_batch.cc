#include "corpora/doc_batch.h"

#include <cstdint>
#include <limits>

#include "base/check.h"

namespace latentd {

void DocBatch::AddDocument(std::string_view id, std::string_view user,
                           std::span<const WordId> doc_words,
                           std::span<const TopicId> doc_topics) {
  LATENTD_CHECK(doc_words.size() == doc_topics.size());
  LATENTD_CHECK(words.size() + doc_words.size() <=
                size_t{std::numeric_limits<uint32_t>::max()});
  words.insert(words.end(), doc_words.begin(), doc_words.end());
  topics.insert(topics.end(), doc_topics.begin(), doc_topics.end());
  doc_offsets.push_back(static_cast<uint32_t>(words.size()));
  doc_ids.emplace_back(id);
  users.emplace_back(user);
}

void DocBatch::Clear() {
  index = 0;
  first_doc = 0;
  doc_offsets.assign(1, 0);
  words.clear();
  topics.clear();
  doc_ids.clear();
  users.clear();
}

}  // namespace latentd
