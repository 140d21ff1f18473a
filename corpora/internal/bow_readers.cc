// Bag-of-words readers: UCI docword ("uci") and LDA-C ("ldac"). Both map
// word ids to words through an optional vocabulary file.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/absl_compat.h"
#include "base/status_macros.h"
#include "corpora/input_file.h"
#include "corpora/internal/reader_base.h"
#include "corpora/tokenizer.h"
#include "corpora/vocabulary.h"

namespace latentd::internal {
namespace {

// Word names by id: the vocabulary file's lines, or "w<id>".
class IdWords {
 public:
  static absl::StatusOr<IdWords> Load(const std::string& path) {
    IdWords words;
    if (path.empty()) return words;
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> file,
                             InputFile::Open(path));
    std::string line;
    std::vector<std::string_view> fields;
    while (true) {
      LATENTD_ASSIGN_OR_RETURN(bool more, file->ReadLine(&line));
      if (!more) break;
      SplitWhitespace(line, &fields);
      if (fields.size() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", file->line_number(),
                         ": expected one word, found ", fields.size()));
      }
      if (words.words_.size() >= Vocabulary::kMaxSize) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": vocabulary too large"));
      }
      words.words_.push_back(LowercaseWord(fields[0]));
    }
    words.from_file_ = true;
    return words;
  }

  bool from_file() const { return from_file_; }
  uint64_t size() const { return words_.size(); }
  // `index` is into the vocabulary file; `id` is the id as written.
  void Append(uint64_t index, uint64_t id, uint64_t count,
              std::vector<std::string>* out) const {
    std::string name = from_file_ ? words_[index] : absl::StrCat("w", id);
    for (uint64_t i = 0; i < count; ++i) out->push_back(name);
  }

 private:
  std::vector<std::string> words_;
  bool from_file_ = false;
};

class UciReader : public ReaderBase {
 public:
  UciReader(const ReaderOptions& options, std::unique_ptr<InputFile> file,
            IdWords words, uint64_t d, uint64_t w, uint64_t nnz)
      : ReaderBase(options.skip_malformed),
        file_(std::move(file)),
        words_(std::move(words)),
        num_docs_(d),
        num_words_(w),
        nnz_(nnz),
        max_count_(options.max_word_count),
        max_doc_tokens_(options.max_document_tokens) {}

  absl::StatusOr<bool> Next(RawDocument* doc) override {
    doc->words.clear();
    doc->user.clear();
    while (true) {
      if (has_pending_) {
        StartDocument(doc);
      } else if (done_) {
        return false;
      }
      LATENTD_RETURN_IF_ERROR(ReadDocumentBody(doc));
      if (current_ != 0 && Accept(*doc)) return true;
      doc->words.clear();
    }
  }

 private:
  struct Entry {
    uint64_t doc = 0, word = 0, count = 0;
  };

  void StartDocument(RawDocument* doc) {
    // Documents between the last one and this one had no entries.
    stats_.empty_documents += pending_.doc - current_ - 1;
    current_ = pending_.doc;
    doc->id = absl::StrCat(current_);
    doc_tokens_ = 0;
    AddEntry(pending_, doc);
    has_pending_ = false;
  }

  void AddEntry(const Entry& e, RawDocument* doc) {
    words_.Append(e.word - 1, e.word, e.count, &doc->words);
    doc_tokens_ += e.count;
  }

  // Reads entries of the current document until one of a later document
  // (kept pending) or the end of the file.
  absl::Status ReadDocumentBody(RawDocument* doc) {
    while (true) {
      LATENTD_ASSIGN_OR_RETURN(bool more, file_->ReadLine(&line_));
      if (!more) return Finish();
      ++stats_.records;
      Entry e;
      LATENTD_ASSIGN_OR_RETURN(bool ok, ParseEntry(&e));
      if (!ok) continue;
      if (e.doc == current_) {
        if (doc_tokens_ + e.count > max_doc_tokens_) {
          LATENTD_RETURN_IF_ERROR(Bad(
              absl::StrCat("document ", current_, " has more than ",
                           max_doc_tokens_, " tokens (max-document-tokens)")));
          continue;
        }
        AddEntry(e, doc);
        continue;
      }
      pending_ = e;
      has_pending_ = true;
      return absl::OkStatus();
    }
  }

  absl::Status Finish() {
    done_ = true;
    stats_.empty_documents += num_docs_ - current_;
    if (entries_ != nnz_) {
      return Bad(absl::StrCat("header says NNZ=", nnz_, " entries, file has ",
                              entries_));
    }
    return absl::OkStatus();
  }

  // Parses line_ into *e; false (after recording) if malformed.
  absl::StatusOr<bool> ParseEntry(Entry* e) {
    SplitWhitespace(line_, &fields_);
    int64_t count;
    std::string what;
    if (fields_.size() != 3) {
      what = absl::StrCat("expected `docID wordID count`, found ",
                          fields_.size(), " fields");
    } else if (!ParseUint(fields_[0], num_docs_, &e->doc) || e->doc == 0) {
      what = absl::StrCat("docID \"", ToAbsl(fields_[0]), "\" not in 1..",
                          num_docs_);
    } else if (!ParseUint(fields_[1], num_words_, &e->word) || e->word == 0) {
      what = absl::StrCat("wordID \"", ToAbsl(fields_[1]), "\" not in 1..",
                          num_words_);
    } else if (!ParseInt(fields_[2], &count) || count <= 0 ||
               static_cast<uint64_t>(count) > max_count_) {
      what = absl::StrCat("count \"", ToAbsl(fields_[2]), "\" not in 1..",
                          max_count_, " (max-word-count)");
    } else if (e->doc < current_) {
      what = absl::StrCat("docID ", e->doc, " after docID ", current_,
                          " (entries must be sorted by docID)");
    } else if (entries_ >= nnz_) {
      what = absl::StrCat("more entries than the header's NNZ=", nnz_);
    }
    if (!what.empty()) {
      LATENTD_RETURN_IF_ERROR(Bad(what));
      return false;
    }
    e->count = static_cast<uint64_t>(count);
    ++entries_;
    return true;
  }

  absl::Status Bad(std::string_view what) {
    return Malformed(file_->path(), file_->line_number(), what);
  }

  std::unique_ptr<InputFile> file_;
  const IdWords words_;
  const uint64_t num_docs_, num_words_, nnz_;
  const uint64_t max_count_, max_doc_tokens_;  // ReaderOptions' limits
  std::string line_;
  std::vector<std::string_view> fields_;
  uint64_t current_ = 0;  // docID being read; 0 before the first
  uint64_t doc_tokens_ = 0, entries_ = 0;
  Entry pending_;
  bool has_pending_ = false, done_ = false;
};

// Reads one header line of a UCI file: a single unsigned number.
absl::StatusOr<uint64_t> ReadHeaderNumber(InputFile& file,
                                          std::string_view name, uint64_t max) {
  std::string line;
  LATENTD_ASSIGN_OR_RETURN(bool more, file.ReadLine(&line));
  std::vector<std::string_view> fields;
  SplitWhitespace(line, &fields);
  uint64_t value = 0;
  if (!more || fields.size() != 1 || !ParseUint(fields[0], max, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        file.path(), ":", file.line_number() + (more ? 0 : 1),
        ": UCI header line ", ToAbsl(name), " must be one number in 0..", max));
  }
  return value;
}

class LdaCReader : public ReaderBase {
 public:
  LdaCReader(const ReaderOptions& options, std::unique_ptr<InputFile> file,
             IdWords words)
      : ReaderBase(options.skip_malformed),
        file_(std::move(file)),
        words_(std::move(words)),
        max_id_(words_.from_file() ? words_.size() - 1
                                   : Vocabulary::kMaxSize - 1),
        max_count_(options.max_word_count),
        max_doc_tokens_(options.max_document_tokens) {}

  absl::StatusOr<bool> Next(RawDocument* doc) override {
    doc->user.clear();
    while (true) {
      LATENTD_ASSIGN_OR_RETURN(bool more, file_->ReadLine(&line_));
      if (!more) return false;
      ++stats_.records;
      doc->words.clear();
      doc->id = absl::StrCat(file_->line_number());
      LATENTD_ASSIGN_OR_RETURN(bool ok, Parse(doc));
      if (ok && Accept(*doc)) return true;
    }
  }

 private:
  // `N id:count ...`; false (after recording) if malformed. A blank line is
  // an empty document.
  absl::StatusOr<bool> Parse(RawDocument* doc) {
    SplitWhitespace(line_, &fields_);
    if (fields_.empty()) return true;
    uint64_t n;
    if (!ParseUint(fields_[0], max_doc_tokens_, &n)) {
      return Bad(absl::StrCat("term count N \"", ToAbsl(fields_[0]),
                              "\" is not a number"));
    }
    if (n != fields_.size() - 1) {
      return Bad(absl::StrCat("N=", n, " but the line has ", fields_.size() - 1,
                              " id:count pairs"));
    }
    uint64_t tokens = 0;
    for (size_t i = 1; i < fields_.size(); ++i) {
      std::string_view pair = fields_[i];
      size_t colon = pair.find(':');
      uint64_t id;
      int64_t count;
      if (colon == std::string_view::npos) {
        return Bad(absl::StrCat("\"", ToAbsl(pair), "\" is not id:count"));
      }
      if (!ParseUint(pair.substr(0, colon), max_id_, &id)) {
        return Bad(absl::StrCat("word id in \"", ToAbsl(pair), "\" not in 0..",
                                max_id_));
      }
      if (!ParseInt(pair.substr(colon + 1), &count) || count <= 0 ||
          static_cast<uint64_t>(count) > max_count_) {
        return Bad(absl::StrCat("count in \"", ToAbsl(pair), "\" not in 1..",
                                max_count_, " (max-word-count)"));
      }
      if (tokens + static_cast<uint64_t>(count) > max_doc_tokens_) {
        return Bad(
            absl::StrCat("more than ", max_doc_tokens_,
                         " tokens in the document (max-document-tokens)"));
      }
      tokens += static_cast<uint64_t>(count);
      words_.Append(id, id, static_cast<uint64_t>(count), &doc->words);
    }
    return true;
  }

  absl::StatusOr<bool> Bad(std::string_view what) {
    LATENTD_RETURN_IF_ERROR(
        Malformed(file_->path(), file_->line_number(), what));
    return false;
  }

  std::unique_ptr<InputFile> file_;
  const IdWords words_;
  const uint64_t max_id_;
  const uint64_t max_count_, max_doc_tokens_;  // ReaderOptions' limits
  std::string line_;
  std::vector<std::string_view> fields_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DocumentReader>> OpenLdaCReader(
    const ReaderOptions& options) {
  LATENTD_ASSIGN_OR_RETURN(IdWords words, IdWords::Load(options.vocab_path));
  if (words.from_file() && words.size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.vocab_path, ": empty vocabulary"));
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> file,
                           InputFile::Open(options.path));
  return std::make_unique<LdaCReader>(options, std::move(file),
                                      std::move(words));
}

absl::StatusOr<std::unique_ptr<DocumentReader>> OpenUciReader(
    const ReaderOptions& options) {
  LATENTD_ASSIGN_OR_RETURN(IdWords words, IdWords::Load(options.vocab_path));
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> file,
                           InputFile::Open(options.path));
  LATENTD_ASSIGN_OR_RETURN(uint64_t d,
                           ReadHeaderNumber(*file, "D", uint64_t{1} << 48));
  LATENTD_ASSIGN_OR_RETURN(uint64_t w,
                           ReadHeaderNumber(*file, "W", Vocabulary::kMaxSize));
  LATENTD_ASSIGN_OR_RETURN(uint64_t nnz,
                           ReadHeaderNumber(*file, "NNZ", uint64_t{1} << 48));
  if (words.from_file() && words.size() < w) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.vocab_path, ": has ", words.size(),
                     " words, the header of ", options.path, " says W=", w));
  }
  return std::make_unique<UciReader>(options, std::move(file), std::move(words),
                                     d, w, nnz);
}

}  // namespace latentd::internal
