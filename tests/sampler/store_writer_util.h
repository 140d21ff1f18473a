// StoreFill: writes test documents into a token store as batches of about
// `batch_tokens` tokens, indexed in order, as the corpus builder lays them
// out. Failures are test failures (EXPECT), so a test reads on to its own
// assertions.
//
// Thread-safety: one thread.
#ifndef LATENTD_TESTS_SAMPLER_STORE_WRITER_UTIL_H_
#define LATENTD_TESTS_SAMPLER_STORE_WRITER_UTIL_H_

#include <memory>
#include <span>
#include <string>

#include "corpora/doc_batch.h"
#include "corpora/token_store.h"
#include "gtest/gtest.h"

namespace latentd::testing {

class StoreFill {
 public:
  StoreFill(TokenStore* store, const TokenStoreMeta& meta, size_t batch_tokens)
      : batch_tokens_(batch_tokens) {
    auto writer = store->Rewrite(meta);
    EXPECT_TRUE(writer.ok()) << writer.status();
    if (writer.ok()) writer_ = std::move(*writer);
  }

  void Add(const std::string& doc_id, std::span<const WordId> words,
           std::span<const TopicId> topics) {
    batch_.AddDocument(doc_id, "", words, topics);
    if (batch_.num_tokens() > batch_tokens_) Flush();
  }

  // Appends the last batch and commits the store's new version.
  void Commit() {
    if (batch_.num_docs() > 0) Flush();
    if (writer_ != nullptr) {
      EXPECT_TRUE(writer_->Commit().ok());
    }
  }

 private:
  void Flush() {
    batch_.index = index_++;
    if (writer_ != nullptr) {
      EXPECT_TRUE(writer_->Append(batch_).ok());
    }
    batch_.Clear();
  }

  const size_t batch_tokens_;
  std::unique_ptr<BatchWriter> writer_;
  DocBatch batch_;
  uint64_t index_ = 0;
};

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SAMPLER_STORE_WRITER_UTIL_H_
