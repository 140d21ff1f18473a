#include "corpora/vocabulary.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "corpora/input_file.h"

namespace latentd {

WordId Vocabulary::Add(std::string_view word) {
  LATENTD_CHECK(!word.empty());
  WordKey key = HashWord(word);
  auto [it, inserted] = by_key_.try_emplace(key, 0);
  if (!inserted) return it->second;
  LATENTD_CHECK(words_.size() < kMaxSize);
  it->second = static_cast<WordId>(words_.size());
  words_.emplace_back(word);
  keys_.push_back(key);
  return it->second;
}

std::optional<WordId> Vocabulary::Find(std::string_view word) const {
  auto it = by_key_.find(HashWord(word));
  if (it == by_key_.end() || words_[it->second] != word) return std::nullopt;
  return it->second;
}

std::optional<WordId> Vocabulary::FindKey(WordKey key) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  return it->second;
}

absl::Status Vocabulary::Save(const std::string& path) const {
  std::string text;
  size_t bytes = 0;
  for (const std::string& w : words_) bytes += w.size() + 1;
  text.reserve(bytes);
  for (const std::string& w : words_) {
    text.append(w);
    text.push_back('\n');
  }
  return WriteFileAtomically(path, text);
}

absl::StatusOr<Vocabulary> Vocabulary::Load(const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<InputFile> file,
                           InputFile::Open(path));
  Vocabulary vocab;
  std::string line;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(bool more, file->ReadLine(&line));
    if (!more) break;
    if (line.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", file->line_number(), ": empty word in vocabulary"));
    }
    if (line.find('\n') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", file->line_number(), ": newline inside a word"));
    }
    if (vocab.size() >= kMaxSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", file->line_number(), ": vocabulary too large"));
    }
    size_t before = vocab.size();
    WordId id = vocab.Add(line);
    if (vocab.size() == before) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", file->line_number(), ": duplicate word \"",
                       line, "\" (first on line ", id + 1, ")"));
    }
  }
  return vocab;
}

}  // namespace latentd
