// libFuzzer harness: every corpus reader (corpora/document_reader.h) on a
// file of arbitrary bytes. The first byte picks the format (lines, yahoo,
// uci, ldac, and a directory of one file) and whether malformed records
// are skipped; for uci and ldac the rest is "vocabulary\0corpus". Each
// reader returns documents or an error naming the file and line, never
// crashes, and every document it returns has words.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "corpora/document_reader.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd;
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const CorpusFormat kFormats[] = {
      CorpusFormat::kLines, CorpusFormat::kYahoo, CorpusFormat::kUci,
      CorpusFormat::kLdaC, CorpusFormat::kDirectory};
  ReaderOptions o;
  o.format = kFormats[mode % 5];
  o.skip_malformed = (mode & 0x10) != 0;
  o.tokenizer.strip_pos_tags = (mode & 0x20) != 0;
  o.tokenizer.remove_stopwords = (mode & 0x40) != 0;
  if (o.format == CorpusFormat::kUci || o.format == CorpusFormat::kLdaC) {
    const size_t nul = rest.find('\0');
    if (nul != std::string_view::npos) {
      o.vocab_path = fuzz::WriteScratchFile("vocab", rest.substr(0, nul));
      rest.remove_prefix(nul + 1);
    }
  }
  if (o.format == CorpusFormat::kDirectory) {
    const std::string dir = fuzz::ScratchDir() + "/dir";
    std::filesystem::create_directories(dir);
    fuzz::WriteScratchFile("dir/doc.txt", rest);
    o.path = dir;
  } else {
    o.path = fuzz::WriteScratchFile("corpus", rest);
  }
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader(o);
  if (!reader.ok()) return 0;
  RawDocument doc;
  uint64_t docs = 0;
  for (int n = 0; n < 100000; ++n) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    if (!more.ok()) {
      LATENTD_FUZZ_CHECK(!o.skip_malformed ||
                         more.status().code() !=
                             absl::StatusCode::kInvalidArgument);
      break;
    }
    if (!*more) break;
    LATENTD_FUZZ_CHECK(!doc.words.empty());
    for (const std::string& w : doc.words) LATENTD_FUZZ_CHECK(!w.empty());
    ++docs;
  }
  LATENTD_FUZZ_CHECK((*reader)->stats().documents == docs);
  (void)(*reader)->stats().Summary();
  return 0;
}
