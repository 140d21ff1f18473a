// libFuzzer harness: the tokenizer and strict UTF-8 (base/utf8.h) on any
// bytes. Words come out as valid, non-empty UTF-8 of the allowed lengths;
// DecodeUtf8 walks exactly the inputs IsValidUtf8 accepts, and what it
// decodes encodes back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "corpora/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // Strict UTF-8: a full decode succeeds exactly on valid text and
  // re-encodes to the same bytes.
  bool decoded_all = true;
  std::string again;
  for (const unsigned char *p = data, *end = data + size; p < end;) {
    char32_t cp = 0;
    const size_t n = DecodeUtf8(p, end, &cp);
    if (n == 0) {
      decoded_all = false;
      ++p;
      continue;
    }
    LATENTD_FUZZ_CHECK(n <= 4 && p + n <= end);
    LATENTD_FUZZ_CHECK(cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF));
    AppendUtf8(cp, &again);
    p += n;
  }
  LATENTD_FUZZ_CHECK(decoded_all == IsValidUtf8(text));
  if (decoded_all) LATENTD_FUZZ_CHECK(again == text);

  for (int variant = 0; variant < 2; ++variant) {
    TokenizerOptions o;
    o.strip_pos_tags = variant == 1;
    o.remove_stopwords = variant == 0;
    o.max_length = variant == 1 ? 8 : 0;
    const Tokenizer tokenizer(o);
    for (const std::string& w : tokenizer.Tokenize(text)) {
      LATENTD_FUZZ_CHECK(!w.empty());
      LATENTD_FUZZ_CHECK(IsValidUtf8(w));
      LATENTD_FUZZ_CHECK(LowercaseWord(w) == w);  // already normalised
      if (o.remove_stopwords) LATENTD_FUZZ_CHECK(!IsEnglishStopword(w));
    }
  }
  (void)LowercaseWord(text);
  return 0;
}
