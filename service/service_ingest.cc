// LatentdService's ingestion: checking and tokenizing documents, dropping
// repeats, forwarding in cluster mode, appending to the ingest log and
// queueing them to merge (Ingest, IngestRecords). Merging is in
// latentd_service.cc.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "service/latentd_service.h"

namespace latentd::service {

absl::StatusOr<std::vector<std::string>> LatentdService::TokenizeDocument(
    std::string_view text) const {
  LATENTD_RETURN_IF_ERROR(CheckTopics("Ingest"));
  if (text.size() > options_.max_text_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("text of ", text.size(), " bytes is over the limit of ",
                     options_.max_text_bytes));
  }
  std::vector<std::string> words = tokenizer_.Tokenize(text);
  std::erase_if(words, [this](const std::string& w) {
    return w.size() > options_.max_word_bytes;
  });
  if (words.empty()) {
    return absl::InvalidArgumentError(
        "empty document: no words left after tokenization");
  }
  return words;
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
  absl::MutexLock lock(&pending_mu_);
  return sources_.contains(source);
}

absl::StatusOr<uint64_t> LatentdService::IngestRecords(
    std::vector<IngestRecord> records, LogRange* appended, bool route) {
  LATENTD_RETURN_IF_ERROR(CheckTopics("Ingest"));
  LATENTD_RETURN_IF_ERROR(router_.CheckJoined());
  uint64_t forwarded = 0;
  if (router_.link() != nullptr && route) {
    LATENTD_RETURN_IF_ERROR(router_.ForwardToOwners(&records, &forwarded));
  }
  {
    absl::MutexLock lock(&pending_mu_);
    std::erase_if(records, [&](const IngestRecord& r)
                               ABSL_EXCLUSIVE_LOCKS_REQUIRED(pending_mu_) {
                                 const bool dup = !r.source.empty() &&
                                                  sources_.contains(r.source);
                                 if (dup) m_.duplicates->Add();
                                 return dup;
                               });
  }
  if (records.empty()) return forwarded;
  // Copies first: a document is acknowledged once every copy is durable.
  if (replicas_ != nullptr && router_.link() != nullptr) {
    LATENTD_RETURN_IF_ERROR(Replicate(records));
  }
  // Appends are serialized by the log; the pending queue keeps log order
  // because both happen under pending_mu_'s successor ordering below.
  absl::MutexLock lock(&pending_mu_);
  if (leaving_) {
    return absl::UnavailableError(
        "this node is leaving the cluster (remove-node): ingest into another "
        "member");
  }
  LATENTD_RETURN_IF_ERROR(log_->Append(&records));
  const uint64_t n = records.size();
  if (appended != nullptr) {
    *appended = {records.front().sequence, records.back().sequence};
  }
  for (IngestRecord& r : records) {
    if (!r.source.empty()) sources_.insert(r.source);
    pending_.push_back(std::move(r));
  }
  ingested_ += n;
  m_.ingested->Add(n);
  m_.pending->Set(static_cast<double>(pending_.size()));
  return n + forwarded;
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

void LatentdService::ReportLogRepair(const IngestLogRepair& repair) {
  const std::string& log = log_->path();
  if (repair.ack_mark_damaged) {
    log::Error("latentd",
               absl::StrCat(AckMarkPath(log),
                            " did not verify: the log's last records could "
                            "not be checked against it; rewritten"));
  }
  if (repair.damage.empty()) return;
  for (const IngestLogDamage& d : repair.damage) {
    if (d.lost() > 0) {
      log::Error("latentd", absl::StrCat(log, ": damaged ", d.Describe()));
    } else {
      LogWarning(absl::StrCat(
          log, ": damaged ", d.Describe(),
          " (their sources are forgotten: a redelivery is ingested again)"));
    }
  }
  m_.log_damage->Add(repair.damage.size());
  m_.lost->Add(repair.lost());
  LogWarning(absl::StrCat(log,
                          " rewritten without the damage; the damaged "
                          "file is kept as ",
                          repair.kept_aside));
}

}  // namespace latentd::service
