#include "ops/bench/warplda_state.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/absl_compat.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace latentd::bench {
namespace {

absl::Status LineError(const std::string& path, size_t line_no,
                       absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ":", line_no, ": ", what));
}

// WarpLDA's word id -> latentd's, from `vocab_path`: a word a line, its id
// the line's index (what WarpLDA's last `format` writes), or "id<TAB>word"
// (earlier ones); -1 for an id the file does not list.
absl::StatusOr<std::vector<int64_t>> MapWarpLdaVocabulary(
    const std::string& vocab_path, const Vocabulary& vocab) {
  LATENTD_ASSIGN_OR_RETURN(std::string text, ReadFileToString(vocab_path));
  std::vector<int64_t> ids;
  size_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    uint32_t id = static_cast<uint32_t>(line_no - 1);
    if (fields.empty() || fields.size() > 2 ||
        (fields.size() == 2 && !absl::SimpleAtoi(fields[0], &id))) {
      return LineError(vocab_path, line_no, "not 'word' or 'id<TAB>word'");
    }
    absl::string_view word = fields.back();
    std::optional<WordId> ours = vocab.Find(internal::ToStd(word));
    if (!ours.has_value()) {
      return LineError(
          vocab_path, line_no,
          absl::StrCat("word '", word, "' is not in the corpus's vocabulary"));
    }
    // Ids are dense (0..V-1 in some order): more than twice the lines read
    // so far is a damaged file, not a large vocabulary.
    if (id > 2 * line_no + 1024) {
      return LineError(
          vocab_path, line_no,
          absl::StrCat("id ", id, " past the file's ", line_no, " lines"));
    }
    if (id >= ids.size()) ids.resize(id + 1, -1);
    ids[id] = *ours;
  }
  return ids;
}

}  // namespace

absl::Status WriteWarpLdaText(TokenStore* store, const Vocabulary& vocab,
                              const std::string& path) {
  std::string text;
  size_t doc = 0;
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        ++doc;
        absl::StrAppend(&text, "d", doc, " d", doc);
        for (WordId w : batch.doc_words(d)) {
          absl::StrAppend(&text, " ", vocab.word(w));
        }
        text += '\n';
      }));
  return WriteFileDurably(path, text);
}

absl::Status WriteWarpLdaState(TokenStore* store, const Vocabulary& vocab,
                               const std::string& prefix) {
  std::string state;
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        std::span<const WordId> words = batch.doc_words(d);
        std::span<const TopicId> topics = batch.doc_topics(d);
        absl::StrAppend(&state, words.size());
        for (size_t i = 0; i < words.size(); ++i) {
          absl::StrAppend(&state, " ", words[i], ":", topics[i]);
        }
        state += '\n';
      }));
  LATENTD_RETURN_IF_ERROR(WriteFileDurably(prefix + ".z.estimate", state));
  std::string words;
  for (size_t w = 0; w < vocab.size(); ++w) {
    absl::StrAppend(&words, w, "\t", vocab.word(static_cast<WordId>(w)), "\n");
  }
  return WriteFileDurably(prefix + ".vocab", words);
}

absl::StatusOr<std::vector<WordTopicDelta>> ReadWarpLdaCounts(
    const std::string& state_path, const std::string& vocab_path,
    const Vocabulary& vocab, TopicId num_topics) {
  LATENTD_ASSIGN_OR_RETURN(std::vector<int64_t> to_ours,
                           MapWarpLdaVocabulary(vocab_path, vocab));
  LATENTD_ASSIGN_OR_RETURN(std::string text, ReadFileToString(state_path));
  absl::flat_hash_map<uint64_t, int32_t> counts;
  size_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t declared = 0;
    if (!absl::SimpleAtoi(fields[0], &declared)) {
      return LineError(state_path, line_no,
                       absl::StrCat("'", fields[0], "' is not a token count"));
    }
    if (declared != fields.size() - 1) {
      return LineError(state_path, line_no,
                       absl::StrCat("declares ", declared, " tokens, holds ",
                                    fields.size() - 1));
    }
    for (size_t i = 1; i < fields.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> parts =
          absl::StrSplit(fields[i], absl::MaxSplits(':', 1));
      uint32_t word = 0, topic = 0;
      if (!absl::SimpleAtoi(parts.first, &word) ||
          !absl::SimpleAtoi(parts.second, &topic)) {
        return LineError(state_path, line_no,
                         absl::StrCat("'", fields[i], "' is not word:topic"));
      }
      if (topic >= num_topics) {
        return LineError(
            state_path, line_no,
            absl::StrCat("topic ", topic, " outside 0..", num_topics - 1));
      }
      if (word >= to_ours.size() || to_ours[word] < 0) {
        return LineError(
            state_path, line_no,
            absl::StrCat("word ", word, " is not in ", vocab_path));
      }
      ++counts[(static_cast<uint64_t>(to_ours[word]) << 32) | topic];
    }
  }
  std::vector<WordTopicDelta> deltas;
  deltas.reserve(counts.size());
  for (const auto& [key, count] : counts) {
    deltas.push_back({static_cast<WordId>(key >> 32),
                      static_cast<TopicId>(key & 0xffffffffu), count});
  }
  std::sort(deltas.begin(), deltas.end(),
            [](const WordTopicDelta& a, const WordTopicDelta& b) {
              return a.word != b.word ? a.word < b.word : a.topic < b.topic;
            });
  return deltas;
}

}  // namespace latentd::bench
