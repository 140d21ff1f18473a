#include "corpora/document_reader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/absl_compat.h"
#include "corpora/internal/reader_base.h"

namespace latentd {
namespace {

class InMemoryDocumentReader : public internal::ReaderBase {
 public:
  explicit InMemoryDocumentReader(std::vector<std::vector<std::string>> docs)
      : ReaderBase(/*skip_malformed=*/true), docs_(std::move(docs)) {}

  absl::StatusOr<bool> Next(RawDocument* doc) override {
    while (next_ < docs_.size()) {
      ++stats_.records;
      doc->id = absl::StrCat(next_);
      doc->user.clear();
      doc->words = docs_[next_++];
      if (Accept(*doc)) return true;
    }
    return false;
  }

 private:
  const std::vector<std::vector<std::string>> docs_;
  size_t next_ = 0;
};

}  // namespace

absl::StatusOr<CorpusFormat> ParseCorpusFormat(std::string_view name) {
  if (name == "lines") return CorpusFormat::kLines;
  if (name == "yahoo") return CorpusFormat::kYahoo;
  if (name == "dir") return CorpusFormat::kDirectory;
  if (name == "uci") return CorpusFormat::kUci;
  if (name == "ldac" || name == "lda-c") return CorpusFormat::kLdaC;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown corpus format \"", internal::ToAbsl(name),
                   "\" (expected lines, yahoo, dir, uci or ldac)"));
}

std::string_view CorpusFormatName(CorpusFormat format) {
  switch (format) {
    case CorpusFormat::kLines:
      return "lines";
    case CorpusFormat::kYahoo:
      return "yahoo";
    case CorpusFormat::kDirectory:
      return "dir";
    case CorpusFormat::kUci:
      return "uci";
    case CorpusFormat::kLdaC:
      return "ldac";
  }
  return "?";
}

std::string ReadStats::Summary() const {
  std::string out = absl::StrCat(documents, " documents, ", tokens, " tokens, ",
                                 empty_documents, " empty, ", malformed,
                                 " malformed records skipped");
  if (!messages.empty()) {
    absl::StrAppend(&out, " (first: ", absl::StrJoin(messages, "; "), ")");
  }
  if (!format_hint.empty()) absl::StrAppend(&out, "; ", format_hint);
  return out;
}

std::string MissingVocabularyWarning(const ReaderOptions& options) {
  const bool bag_of_words = options.format == CorpusFormat::kUci ||
                            options.format == CorpusFormat::kLdaC;
  if (!bag_of_words || !options.vocab_path.empty()) return "";
  const bool ldac = options.format == CorpusFormat::kLdaC;
  return absl::StrCat(
      options.path, ": ", ldac ? "an LDA-C" : "a UCI",
      " corpus read without a vocabulary (--vocab): its words are named by "
      "their ids, ",
      ldac ? "w0, w1, ..." : "w1, w2, ...",
      " (topics print those names); give the vocabulary file, one word a "
      "line, to name them");
}

absl::StatusOr<std::unique_ptr<DocumentReader>> OpenDocumentReader(
    const ReaderOptions& options) {
  switch (options.format) {
    case CorpusFormat::kLines:
    case CorpusFormat::kYahoo:
      return internal::OpenLinesReader(options);
    case CorpusFormat::kDirectory:
      return internal::OpenDirectoryReader(options);
    case CorpusFormat::kUci:
      return internal::OpenUciReader(options);
    case CorpusFormat::kLdaC:
      return internal::OpenLdaCReader(options);
  }
  return absl::InvalidArgumentError("unknown corpus format");
}

std::unique_ptr<DocumentReader> NewInMemoryDocumentReader(
    std::vector<std::vector<std::string>> docs) {
  return std::make_unique<InMemoryDocumentReader>(std::move(docs));
}

}  // namespace latentd
