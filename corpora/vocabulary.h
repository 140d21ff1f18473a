// Vocabulary: the node-local map between normalised words, their global
// WordKeys (HashWord) and dense WordIds 0..size()-1, in order of addition.
//
// Thread-safety: const methods may run concurrently; Add() needs exclusive
// access (callers that add while others read must lock around it).
#ifndef LATENTD_CORPORA_VOCABULARY_H_
#define LATENTD_CORPORA_VOCABULARY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/types.h"

namespace latentd {

class Vocabulary {
 public:
  // Most words a vocabulary may hold (WordIds are stored as 32 bits).
  static constexpr size_t kMaxSize = size_t{1} << 31;

  Vocabulary() = default;

  // Returns the id of `word`, adding it if new. `word` must be normalised
  // (tokenizer output) and non-empty. REQUIRES: size() < kMaxSize.
  WordId Add(std::string_view word);
  std::optional<WordId> Find(std::string_view word) const;
  std::optional<WordId> FindKey(WordKey key) const;

  // REQUIRES: id < size().
  const std::string& word(WordId id) const { return words_[id]; }
  WordKey key(WordId id) const { return keys_[id]; }
  size_t size() const { return words_.size(); }

  // Text form: one word per line, line i is WordId i. Save writes
  // atomically (temp file, fsync, rename). Load rejects empty lines and
  // duplicates, naming the line.
  absl::Status Save(const std::string& path) const;
  static absl::StatusOr<Vocabulary> Load(const std::string& path);

 private:
  std::vector<std::string> words_;
  std::vector<WordKey> keys_;
  absl::flat_hash_map<WordKey, WordId> by_key_;
};

}  // namespace latentd

#endif  // LATENTD_CORPORA_VOCABULARY_H_
