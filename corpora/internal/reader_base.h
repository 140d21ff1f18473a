// Shared machinery of the document readers: malformed-record accounting
// and strict field parsing. Not thread-safe (one reader, one thread).
#ifndef LATENTD_CORPORA_INTERNAL_READER_BASE_H_
#define LATENTD_CORPORA_INTERNAL_READER_BASE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/document_reader.h"

namespace latentd::internal {

class ReaderBase : public DocumentReader {
 public:
  explicit ReaderBase(bool skip_malformed) : skip_malformed_(skip_malformed) {}
  const ReadStats& stats() const override { return stats_; }

 protected:
  // Records the malformed record "path:line: what" (line 0: no line). Returns
  // OK when it is to be skipped, else kInvalidArgument with the message.
  absl::Status Malformed(std::string_view path, uint64_t line,
                         std::string_view what);
  // Counts a finished document; false (counted as empty) if it has no words.
  bool Accept(const RawDocument& doc);

  ReadStats stats_;

 private:
  bool skip_malformed_;
};

// Guesses, from the first non-empty lines of a file read as raw text,
// whether it is in a bag-of-words format instead: every line `N id:count
// ...` (LDA-C), or three lines of one integer each (a UCI docword header).
// Only looks: it changes nothing that is read.
class FormatSniffer {
 public:
  static constexpr int kLines = 5;  // non-empty lines looked at
  // Looks at the next line; no-op once decided.
  void Add(std::string_view line);
  // True once enough lines are seen (or call Hint at the end of the file).
  bool decided() const { return seen_ >= kLines || (!ldac_ && !uci_); }
  // "this looks like an LDA-C file: did you mean --format ldac?", the UCI
  // counterpart, or "".
  std::string Hint() const;

 private:
  int seen_ = 0;
  bool ldac_ = true;  // every line so far is `N id:count ...`
  bool uci_ = true;   // lines so far fit D, W, NNZ, then `doc word count`
  std::vector<std::string_view> fields_;
};

// Splits on ASCII whitespace, dropping empty fields. Views into `line`.
void SplitWhitespace(std::string_view line,
                     std::vector<std::string_view>* fields);
// Strict unsigned decimal (digits only, no sign) <= max.
bool ParseUint(std::string_view text, uint64_t max, uint64_t* value);
// Strict signed decimal ("-" allowed) within int64.
bool ParseInt(std::string_view text, int64_t* value);

// Factories behind OpenDocumentReader (text_readers.cc, bow_readers.cc).
absl::StatusOr<std::unique_ptr<DocumentReader>> OpenLinesReader(
    const ReaderOptions& options);
absl::StatusOr<std::unique_ptr<DocumentReader>> OpenDirectoryReader(
    const ReaderOptions& options);
absl::StatusOr<std::unique_ptr<DocumentReader>> OpenUciReader(
    const ReaderOptions& options);
absl::StatusOr<std::unique_ptr<DocumentReader>> OpenLdaCReader(
    const ReaderOptions& options);

}  // namespace latentd::internal

#endif  // LATENTD_CORPORA_INTERNAL_READER_BASE_H_
