// DocBatch: a run of documents in flat arrays, the unit that the token store
// reads and writes and that the sampling pipeline moves between its stages.
//
// Thread-safety: a plain value type; one owner at a time (the pipeline hands
// a batch from stage to stage, never sharing it).
#ifndef LATENTD_CORPORA_DOC_BATCH_H_
#define LATENTD_CORPORA_DOC_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "corpora/types.h"

namespace latentd {

struct DocBatch {
  // Position of this batch in its store (0, 1, ...); seeds per-batch RNGs so
  // a sweep's draws do not depend on which thread sampled the batch.
  uint64_t index = 0;
  // Store-wide index of the first document of the batch.
  DocIndex first_doc = 0;
  // Document d owns tokens [doc_offsets[d], doc_offsets[d+1]) of words and
  // topics. Always num_docs()+1 entries, starting at 0.
  std::vector<uint32_t> doc_offsets{0};
  std::vector<WordId> words;
  std::vector<TopicId> topics;       // same length as words
  std::vector<std::string> doc_ids;  // external document ids ("" if none)
  std::vector<std::string> users;    // user ids ("" if none)

  size_t num_docs() const { return doc_offsets.size() - 1; }
  size_t num_tokens() const { return words.size(); }
  size_t doc_length(size_t d) const {
    return doc_offsets[d + 1] - doc_offsets[d];
  }
  std::span<const WordId> doc_words(size_t d) const {
    return {words.data() + doc_offsets[d], doc_length(d)};
  }
  std::span<TopicId> doc_topics(size_t d) {
    return {topics.data() + doc_offsets[d], doc_length(d)};
  }
  std::span<const TopicId> doc_topics(size_t d) const {
    return {topics.data() + doc_offsets[d], doc_length(d)};
  }

  // Appends one document. REQUIRES: words.size() == topics.size().
  void AddDocument(std::string_view id, std::string_view user,
                   std::span<const WordId> doc_words,
                   std::span<const TopicId> doc_topics);
  // Empties the batch, keeping capacity.
  void Clear();
};

}  // namespace latentd

#endif  // LATENTD_CORPORA_DOC_BATCH_H_
