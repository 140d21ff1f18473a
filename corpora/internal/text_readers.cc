// Raw-text readers: one document per line ("lines", "yahoo") and one
// document per file ("dir").
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/absl_compat.h"
#include "base/status_macros.h"
#include "corpora/input_file.h"
#include "corpora/internal/reader_base.h"
#include "corpora/tokenizer.h"

namespace latentd::internal {
namespace {

// "lines" and "yahoo": a line is a document.
class LineDocumentReader : public ReaderBase {
 public:
  LineDocumentReader(const ReaderOptions& options,
                     std::unique_ptr<InputFile> file)
      : ReaderBase(options.skip_malformed),
        yahoo_(options.format == CorpusFormat::kYahoo),
        tokenizer_(options.tokenizer),
        file_(std::move(file)) {}

  absl::StatusOr<bool> Next(RawDocument* doc) override {
    while (true) {
      LATENTD_ASSIGN_OR_RETURN(bool more, file_->ReadLine(&line_));
      if (!more) {
        stats_.format_hint = sniffer_.Hint();
        return false;
      }
      ++stats_.records;
      if (!sniffer_.decided()) {
        sniffer_.Add(line_);
        if (sniffer_.decided()) stats_.format_hint = sniffer_.Hint();
      }
      doc->words.clear();
      doc->user.clear();
      if (!yahoo_) {
        doc->id = absl::StrCat(file_->line_number());
        tokenizer_.Tokenize(line_, &doc->words);
      } else {
        LATENTD_ASSIGN_OR_RETURN(bool parsed, ParseYahoo(doc));
        if (!parsed) continue;
      }
      if (Accept(*doc)) return true;
    }
  }

 private:
  // `doc-id user-id text...`. A blank line is an empty document; a line
  // with only one field is malformed. Returns false to skip the line.
  absl::StatusOr<bool> ParseYahoo(RawDocument* doc) {
    SplitWhitespace(line_, &fields_);
    if (fields_.empty()) {
      doc->id.clear();
      return true;
    }
    if (fields_.size() < 2) {
      LATENTD_RETURN_IF_ERROR(
          Malformed(file_->path(), file_->line_number(),
                    "expected `doc-id user-id words...`, found 1 field"));
      return false;
    }
    doc->id.assign(fields_[0]);
    doc->user.assign(fields_[1]);
    const char* rest = fields_[1].data() + fields_[1].size();
    tokenizer_.Tokenize(
        std::string_view(rest, line_.data() + line_.size() - rest),
        &doc->words);
    return true;
  }

  const bool yahoo_;
  const Tokenizer tokenizer_;
  std::unique_ptr<InputFile> file_;
  std::string line_;
  std::vector<std::string_view> fields_;
  FormatSniffer sniffer_;  // first lines only
};

// "dir": every regular file under the root is a document.
class DirectoryDocumentReader : public ReaderBase {
 public:
  DirectoryDocumentReader(const ReaderOptions& options,
                          std::vector<std::string> files)
      : ReaderBase(options.skip_malformed),
        root_(options.path),
        tokenizer_(options.tokenizer),
        files_(std::move(files)) {}

  absl::StatusOr<bool> Next(RawDocument* doc) override {
    while (next_ < files_.size()) {
      const std::string& relative = files_[next_++];
      std::string path = root_ + "/" + relative;
      ++stats_.records;
      absl::StatusOr<std::string> text = ReadWholeFile(path);
      if (!text.ok()) {
        LATENTD_RETURN_IF_ERROR(
            Malformed(path, 0, ToStd(text.status().message())));
        continue;
      }
      doc->id = relative;
      doc->user.clear();
      doc->words.clear();
      tokenizer_.Tokenize(*text, &doc->words);
      if (Accept(*doc)) return true;
    }
    return false;
  }

 private:
  const std::string root_;
  const Tokenizer tokenizer_;
  const std::vector<std::string> files_;
  size_t next_ = 0;
};

// Relative paths of the regular files under `root`, sorted bytewise,
// skipping any path component that starts with '.'.
absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(absl::StrCat(root, ": not a directory"));
  }
  std::vector<std::string> files;
  fs::recursive_directory_iterator it(root, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.filename().string().starts_with(".")) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) {
      files.push_back(p.lexically_relative(root).generic_string());
    }
  }
  if (ec) {
    return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                        absl::StrCat("cannot list ", root, ": ", ec.message()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DocumentReader>> OpenLinesReader(
    const ReaderOptions& options) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> file,
                           InputFile::Open(options.path));
  return std::make_unique<LineDocumentReader>(options, std::move(file));
}

absl::StatusOr<std::unique_ptr<DocumentReader>> OpenDirectoryReader(
    const ReaderOptions& options) {
  LATENTD_ASSIGN_OR_RETURN(std::vector<std::string> files,
                           ListFiles(options.path));
  return std::make_unique<DirectoryDocumentReader>(options, std::move(files));
}

}  // namespace latentd::internal
