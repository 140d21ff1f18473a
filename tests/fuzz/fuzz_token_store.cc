// libFuzzer harness: the on-disk token store reader (OpenFileTokenStore and
// a full pass of its BatchReader) on a file of arbitrary bytes. A damaged
// store is an error naming the file; what it reads back keeps the header's
// bounds (every word < vocab_size, every topic < num_topics, documents
// well formed) and adds up to the header's counts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "corpora/token_store.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd;
  const std::string path = fuzz::WriteScratchFile(
      "store.lts", std::string_view(reinterpret_cast<const char*>(data), size));
  absl::StatusOr<std::unique_ptr<TokenStore>> store = OpenFileTokenStore(path);
  if (!store.ok()) return 0;
  const TokenStoreMeta meta = (*store)->meta();
  absl::StatusOr<std::unique_ptr<BatchReader>> reader = (*store)->Read();
  if (!reader.ok()) return 0;
  DocBatch batch;
  uint64_t docs = 0, tokens = 0, batches = 0;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    if (!more.ok() || !*more) {
      if (more.ok()) {
        LATENTD_FUZZ_CHECK(docs == meta.num_docs);
        LATENTD_FUZZ_CHECK(tokens == meta.num_tokens);
        LATENTD_FUZZ_CHECK(batches == meta.num_batches);
      }
      break;
    }
    LATENTD_FUZZ_CHECK(!batch.doc_offsets.empty() && batch.doc_offsets[0] == 0);
    LATENTD_FUZZ_CHECK(batch.doc_offsets.back() == batch.words.size());
    LATENTD_FUZZ_CHECK(batch.words.size() == batch.topics.size());
    for (size_t d = 0; d + 1 < batch.doc_offsets.size(); ++d) {
      LATENTD_FUZZ_CHECK(batch.doc_offsets[d] <= batch.doc_offsets[d + 1]);
    }
    for (WordId w : batch.words) LATENTD_FUZZ_CHECK(w < meta.vocab_size);
    for (TopicId t : batch.topics) LATENTD_FUZZ_CHECK(t < meta.num_topics);
    LATENTD_FUZZ_CHECK(batch.first_doc == docs);
    docs += batch.num_docs();
    tokens += batch.num_tokens();
    ++batches;
  }
  return 0;
}
