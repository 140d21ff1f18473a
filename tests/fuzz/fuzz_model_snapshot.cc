// libFuzzer harness: the model snapshot reader (ModelSnapshot::Load, and
// VerifyFile on what Load accepts) on a file of arbitrary bytes. When the
// first input byte is odd the trailing XXH64 is recomputed, so the decoder
// behind the checksum sees the bytes. What Load accepts is a model that can be
// used: offsets and topics in range, α of length K, and it serializes back to
// the same file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sampler/model_snapshot.h"
#include "tests/fuzz/fuzz_util.h"
#include "xxhash.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd;
  if (size < 1) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) != 0 && bytes.size() >= 8) {
    // The checksum: XXH64 (seed "snap") of what precedes it, little-endian.
    const size_t body = bytes.size() - 8;
    uint64_t sum = XXH64(bytes.data(), body, 0x736e6170);
    for (int i = 0; i < 8; ++i) {
      bytes[body + static_cast<size_t>(i)] = static_cast<char>(sum & 0xff);
      sum >>= 8;
    }
  }
  const std::string path = fuzz::WriteScratchFile("model.bin", bytes);
  absl::StatusOr<ModelSnapshot> s = ModelSnapshot::Load(path);
  if (!s.ok()) return 0;
  // Only here: VerifyFile reads through a fresh 1 MiB buffer, whose page
  // faults would dominate the run.
  LATENTD_FUZZ_CHECK(ModelSnapshot::VerifyFile(path).ok());
  LATENTD_FUZZ_CHECK(s->alpha.size() == s->num_topics);
  LATENTD_FUZZ_CHECK(s->word_offsets.size() == s->vocab_size + size_t{1});
  LATENTD_FUZZ_CHECK(s->word_offsets.front() == 0);
  LATENTD_FUZZ_CHECK(s->word_offsets.back() == s->entries.size());
  for (size_t w = 0; w < s->vocab_size; ++w) {
    LATENTD_FUZZ_CHECK(s->word_offsets[w] <= s->word_offsets[w + 1]);
  }
  for (const ModelSnapshot::Entry& e : s->entries) {
    LATENTD_FUZZ_CHECK(e.topic < s->num_topics);
  }
  LATENTD_FUZZ_CHECK(s->Serialize() == bytes);
  return 0;
}
