// DocumentReader: streams the documents of a corpus file (or directory) in
// one of the supported formats, as normalised words ready for the
// Vocabulary and the corpus builder. Files ending in .zst / .gz are
// decompressed transparently (see input_file.h).
//
// Formats (ReaderOptions::format, ParseCorpusFormat names in quotes):
//  "lines"  one document per line, raw text; id = 1-based line number.
//  "yahoo"  YahooLDA: `doc-id user-id text...` per line.
//  "dir"    a directory tree, one document per regular file (recursive,
//           sorted by relative path, names starting with '.' skipped);
//           id = path relative to the root.
//  "uci"    UCI bag of words: lines D, W, NNZ, then `docID wordID count`
//           (1-based, docIDs non-decreasing); id = docID.
//  "ldac"   LDA-C: `N id:count ...` per line (0-based ids, any whitespace);
//           id = 1-based line number.
// Raw-text formats go through the Tokenizer. For uci/ldac the words come
// from the vocabulary file (line i = word i, trimmed and lowercased, no
// stop-word filter) or, without one, are named "w<id>" (the id as written).
// A word with count c appears c times, in file order.
//
// Errors: a malformed record (bad number, id out of range, count <= 0, N not
// matching the pairs, UCI line out of order or beyond the D/W/NNZ header,
// wrong field count, unreadable file in "dir") is reported as
// "file:line: what". With skip_malformed it is skipped and counted in
// stats() (with the first messages kept); otherwise Next() returns
// kInvalidArgument with that message. A bad UCI header or vocabulary file is
// always an error (from OpenDocumentReader). Documents left empty after
// tokenization are skipped and counted, never an error. I/O errors and
// corrupt compressed input are returned as they come (kNotFound, kDataLoss).
//
// Thread-safety: a DocumentReader is used by one thread at a time.
#ifndef LATENTD_CORPORA_DOCUMENT_READER_H_
#define LATENTD_CORPORA_DOCUMENT_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/tokenizer.h"

namespace latentd {

enum class CorpusFormat { kLines, kYahoo, kDirectory, kUci, kLdaC };

// "lines", "yahoo", "dir", "uci", "ldac" (also "lda-c"); kInvalidArgument
// listing the accepted names otherwise.
absl::StatusOr<CorpusFormat> ParseCorpusFormat(std::string_view name);
// The canonical name ParseCorpusFormat accepts.
std::string_view CorpusFormatName(CorpusFormat format);

struct RawDocument {
  std::string id;    // external document id ("" if the format has none)
  std::string user;  // user id (yahoo format), else ""
  std::vector<std::string> words;  // normalised, in document order
};

struct ReaderOptions {
  CorpusFormat format = CorpusFormat::kLines;
  std::string path;            // file, or directory for kDirectory
  std::string vocab_path;      // uci/ldac vocabulary; "" = words "w<id>"
  TokenizerOptions tokenizer;  // raw-text formats only
  bool skip_malformed = true;  // false: the first malformed record is fatal
  // Bag-of-words formats (uci, ldac), where a few bytes can announce
  // millions of tokens: the largest count of one word in one document, and
  // the most tokens in one document. A record over either is malformed.
  uint64_t max_word_count = uint64_t{1} << 16;
  uint64_t max_document_tokens = uint64_t{1} << 20;
};

struct ReadStats {
  // How many messages of skipped records are kept.
  static constexpr size_t kMaxMessages = 10;

  uint64_t records = 0;    // lines (files for "dir") read, headers excluded
  uint64_t documents = 0;  // documents returned by Next()
  uint64_t tokens = 0;     // words in the returned documents
  uint64_t empty_documents = 0;       // skipped: no words left
  uint64_t malformed = 0;             // skipped malformed records
  std::vector<std::string> messages;  // the first kMaxMessages of those
  // Set when the first lines of a "lines" or "yahoo" file look like another
  // format, e.g. "this looks like an LDA-C file: did you mean --format
  // ldac?". Only a hint: the file is read as the format given.
  std::string format_hint;

  // One line, e.g. "2246 documents, 435838 tokens, 0 empty, 3 malformed
  // records skipped (first: ap.dat:7: ...; ...)", then "; " and the format
  // hint, if any.
  std::string Summary() const;
};

class DocumentReader {
 public:
  virtual ~DocumentReader() = default;
  // Fills *doc (overwritten) with the next non-empty document. Returns false
  // at the end, an error as described above.
  virtual absl::StatusOr<bool> Next(RawDocument* doc) = 0;
  // Counts so far; final once Next() has returned false.
  virtual const ReadStats& stats() const = 0;
};

// For a uci or ldac corpus read without a vocabulary file: a warning for
// people, "<path>: an LDA-C corpus read without a vocabulary (--vocab): its
// words are named by their ids, w0, w1, ..."; "" otherwise.
std::string MissingVocabularyWarning(const ReaderOptions& options);

// Opens the corpus described by `options`. Fails if the file, directory or
// vocabulary cannot be read or a UCI header is bad.
absl::StatusOr<std::unique_ptr<DocumentReader>> OpenDocumentReader(
    const ReaderOptions& options);

// A reader over documents already in memory (each a list of normalised
// words; ids are the 0-based positions). Empty documents are skipped and
// counted like any reader's. Takes ownership of `docs`.
std::unique_ptr<DocumentReader> NewInMemoryDocumentReader(
    std::vector<std::vector<std::string>> docs);

}  // namespace latentd

#endif  // LATENTD_CORPORA_DOCUMENT_READER_H_
