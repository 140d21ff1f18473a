#include "service/document_checker.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/utf8.h"

namespace latentd::service {

DocumentChecker::DocumentChecker(const ServiceOptions& options,
                                 const TrainingLoop* training)
    : options_(options), training_(*training) {}

absl::StatusOr<std::vector<std::string>> DocumentChecker::TokenizeDocument(
    std::string_view text) const {
  if (text.size() > options_.max_text_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("text of ", text.size(), " bytes is over the limit of ",
                     options_.max_text_bytes));
  }
  std::vector<std::string> words = training_.tokenizer().Tokenize(text);
  std::erase_if(words, [this](const std::string& w) {
    return w.size() > options_.max_word_bytes;
  });
  if (words.empty()) {
    return absl::InvalidArgumentError(
        "empty document: no words left after tokenization");
  }
  return words;
}

absl::Status DocumentChecker::CheckLimits(const IngestRecord& r) const {
  const size_t max_id = options_.max_id_bytes;
  for (const auto& [what, value] :
       {std::pair<const char*, const std::string*>{"user id", &r.user},
        {"document id", &r.doc_id},
        {"source", &r.source}}) {
    if (value->size() > max_id) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " of ", value->size(), " bytes is over the limit of ", max_id,
          " (max-id-bytes)"));
    }
  }
  if (r.words.size() > options_.corpus.max_document_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        r.words.size(), " words are over the limit of ",
        options_.corpus.max_document_tokens, " (max-document-tokens)"));
  }
  for (size_t i = 0; i < r.words.size(); ++i) {
    if (r.words[i].size() > options_.max_word_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "word ", i, " of ", r.words[i].size(), " bytes is over the limit of ",
          options_.max_word_bytes, " (max-word-bytes)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> DocumentChecker::HandedOffWords(
    const api::Document& d, bool local, std::vector<TopicId>* topics) const {
  if (!local) {
    return absl::InvalidArgumentError(
        "a document given as words and topics (a hand-off) is taken only in "
        "a request with local set");
  }
  if (!d.text().empty()) {
    return absl::InvalidArgumentError("give text or words, not both");
  }
  if (d.words_size() == 0 || d.words_size() != d.topics_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(d.words_size(), " words and ", d.topics_size(),
                     " topics: give one topic per word, at least one word"));
  }
  const uint32_t k = training_.view()->snapshot.num_topics;
  size_t bytes = 0;
  std::vector<std::string> words;
  words.reserve(d.words_size());
  for (int i = 0; i < d.words_size(); ++i) {
    const std::string& w = d.words(i);
    bytes += w.size();
    const bool spaced = std::any_of(w.begin(), w.end(), [](char c) {
      return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
    });
    if (w.empty() || spaced || !IsValidUtf8(w)) {
      return absl::InvalidArgumentError(
          absl::StrCat("word ", i,
                       " is empty, holds a space or control byte, or is not "
                       "UTF-8"));
    }
    if (d.topics(i) >= k) {
      return absl::InvalidArgumentError(absl::StrCat(
          "word ", i, "'s topic ", d.topics(i), " is not below K=", k));
    }
    words.push_back(w);
  }
  if (bytes > options_.max_text_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("words of ", bytes, " bytes are over the limit of ",
                     options_.max_text_bytes));
  }
  topics->assign(d.topics().begin(), d.topics().end());
  return words;
}

absl::StatusOr<std::vector<IngestRecord>> DocumentChecker::Records(
    const api::IngestRequest& request) const {
  std::vector<IngestRecord> records;
  for (int i = 0; i < request.documents_size(); ++i) {
    const api::Document& d = request.documents(i);
    std::vector<TopicId> topics;  // a hand-off's
    absl::StatusOr<std::vector<std::string>> words =
        d.words_size() + d.topics_size() > 0
            ? HandedOffWords(d, request.local(), &topics)
            : TokenizeDocument(d.text());
    if (!words.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "document ", i, " (id '", d.id(), "'): ", words.status().message()));
    }
    IngestRecord& r = records.emplace_back();
    r.doc_id = d.id();
    r.user = d.user();
    r.source = d.source();
    r.words = std::move(*words);
    r.topics = std::move(topics);
    if (absl::Status limits = CheckLimits(r); !limits.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("document ", i, ": ", limits.message()));
    }
  }
  return records;
}

}  // namespace latentd::service
