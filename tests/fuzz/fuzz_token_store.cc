// libFuzzer harness: the on-disk token store reader (OpenFileTokenStore and
// a full pass of its BatchReader) on a file of arbitrary bytes (after a
// first byte: when it is odd, every checksum is recomputed, so the
// decoders behind them see the bytes). A damaged
// store is an error naming the file; what it reads back keeps the header's
// bounds (every word < vocab_size, every topic < num_topics, documents
// well formed) and adds up to the header's counts. A store that fails its
// pass goes through RepairFileTokenStore: refused, or repaired into a store
// that reads clean with the header's document count (the lost ones empty).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/file_system.h"
#include "corpora/token_store.h"
#include "corpora/token_store_repair.h"
#include "tests/fuzz/fuzz_util.h"
#include "xxhash.h"

namespace {

constexpr uint64_t kChecksumSeed = 0x4c54444b53554d31ULL;  // as the store's

uint64_t GetU64(const std::string& s, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(s[at + static_cast<size_t>(i)]);
  }
  return v;
}

void PutChecksum(std::string* s, size_t at, size_t from, size_t n) {
  uint64_t sum = XXH64(s->data() + from, n, kChecksumSeed);
  for (int i = 0; i < 8; ++i) {
    (*s)[at + static_cast<size_t>(i)] = static_cast<char>(sum & 0xff);
    sum >>= 8;
  }
}

// Recomputes the file header's and each block's checksums (layout in
// corpora/internal/token_store_format.h), so that the decoders behind them
// see the mutated bytes.
void FixChecksums(std::string* s) {
  if (s->size() < 64) return;
  PutChecksum(s, 56, 0, 56);
  size_t pos = 64;
  while (s->size() - pos >= 40) {
    const uint64_t payload = GetU64(*s, pos + 16);
    const size_t left = s->size() - pos - 40;
    if (payload <= left) {
      PutChecksum(s, pos + 24, pos + 40, static_cast<size_t>(payload));
    }
    PutChecksum(s, pos + 32, pos, 32);
    if (payload > left) break;
    pos += 40 + static_cast<size_t>(payload);
  }
}

// A full pass; false at the first error.
bool ReadsClean(latentd::TokenStore& store) {
  absl::StatusOr<std::unique_ptr<latentd::BatchReader>> reader = store.Read();
  if (!reader.ok()) return false;
  latentd::DocBatch batch;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    if (!more.ok()) return false;
    if (!*more) return true;
  }
}

void CheckRepair(const std::string& path, const latentd::TokenStoreMeta& meta) {
  using namespace latentd;
  absl::StatusOr<TokenStoreRepair> repair = RepairFileTokenStore(path);
  if (!repair.ok()) return;
  if (!repair->kept_aside.empty()) {
    (void)FileSystem::Default()->Remove(repair->kept_aside);
  }
  absl::StatusOr<std::unique_ptr<TokenStore>> again = OpenFileTokenStore(path);
  LATENTD_FUZZ_CHECK(again.ok());
  LATENTD_FUZZ_CHECK((*again)->meta().num_docs == meta.num_docs);
  LATENTD_FUZZ_CHECK(ReadsClean(**again));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd;
  if (size < 1) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) != 0) FixChecksums(&bytes);
  const std::string path = fuzz::WriteScratchFile("store.lts", bytes);
  absl::StatusOr<std::unique_ptr<TokenStore>> store = OpenFileTokenStore(path);
  if (!store.ok()) return 0;
  const TokenStoreMeta meta = (*store)->meta();
  absl::StatusOr<std::unique_ptr<BatchReader>> reader = (*store)->Read();
  if (!reader.ok()) return 0;
  DocBatch batch;
  uint64_t docs = 0, tokens = 0, batches = 0;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    if (!more.ok()) {
      reader->reset();
      store->reset();
      CheckRepair(path, meta);
      break;
    }
    if (!*more) {
      {
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
