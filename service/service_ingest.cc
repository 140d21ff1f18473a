// LatentdService's ingestion calls: checking and tokenizing documents
// (Ingest, IngestRecords) and a peer's replica copies. The ingest path itself
// (log, queue, deduplication, forwarding, replication) is IngestPath's
// (service/ingest_path.h); merging is the TrainingLoop's.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "base/utf8.h"
#include "service/latentd_service.h"

namespace latentd::service {

absl::StatusOr<std::vector<std::string>> LatentdService::TokenizeDocument(
    std::string_view text) const {
  LATENTD_RETURN_IF_ERROR(CheckTopics("Ingest"));
  return queries_.TokenizeDocument(text);
}

absl::Status LatentdService::CheckDocumentLimits(const IngestRecord& r) const {
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

bool LatentdService::SourceIngested(const std::string& source) const {
  return ingest_.SourceIngested(source);
}

absl::StatusOr<uint64_t> LatentdService::IngestRecords(
    std::vector<IngestRecord> records, LogRange* appended, bool route) {
  LATENTD_RETURN_IF_ERROR(CheckTopics("Ingest"));
  return ingest_.Ingest(std::move(records), appended, route);
}

absl::StatusOr<std::vector<std::string>> LatentdService::HandedOffWords(
    const api::Document& d, bool local, std::vector<TopicId>* topics) const {
  LATENTD_RETURN_IF_ERROR(CheckTopics("Ingest"));
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
  const uint32_t k = view()->snapshot.num_topics;
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

absl::StatusOr<std::vector<IngestRecord>> LatentdService::RequestRecords(
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
    if (absl::Status limits = CheckDocumentLimits(r); !limits.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("document ", i, ": ", limits.message()));
    }
  }
  return records;
}

absl::StatusOr<api::IngestResponse> LatentdService::Ingest(
    const api::IngestRequest& request) {
  if (request.documents_size() == 0) {
    return absl::InvalidArgumentError("ingest request holds no documents");
  }
  if (static_cast<size_t>(request.documents_size()) >
      options_.max_documents_per_ingest) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ingest request holds ", request.documents_size(),
        " documents; at most ", options_.max_documents_per_ingest));
  }
  if (!request.replica_of().empty()) return IngestReplica(request);
  LATENTD_ASSIGN_OR_RETURN(std::vector<IngestRecord> records,
                           RequestRecords(request));
  LogRange appended;
  LATENTD_ASSIGN_OR_RETURN(
      uint64_t n,
      IngestRecords(std::move(records), &appended, !request.local()));
  api::IngestResponse resp;
  resp.set_accepted(n);
  resp.set_first_sequence(appended.first);
  resp.set_last_sequence(appended.last);
  return resp;
}

absl::StatusOr<api::IngestResponse> LatentdService::IngestReplica(
    const api::IngestRequest& request) {
  ReplicaLogs* replicas = ingest_.replica_logs();
  if (replicas == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replica copies from ", request.replica_of(),
        ": this node keeps none (not in cluster mode, or --replicas 1)"));
  }
  LATENTD_ASSIGN_OR_RETURN(std::vector<IngestRecord> records,
                           RequestRecords(request));
  LATENTD_ASSIGN_OR_RETURN(
      uint64_t n, replicas->Append(request.replica_of(), std::move(records)));
  api::IngestResponse resp;
  resp.set_accepted(n);
  return resp;
}

}  // namespace latentd::service
