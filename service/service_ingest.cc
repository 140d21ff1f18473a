// LatentdService's ingestion calls (Ingest, IngestRecords) and a peer's
// replica copies; documents are checked by DocumentChecker. The ingest path
// itself (log, queue, deduplication, forwarding, replication) is IngestPath's
// (service/ingest_path.h); merging is the TrainingLoop's.
#include <algorithm>
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
  return checker_.TokenizeDocument(text);
}

absl::Status LatentdService::CheckDocumentLimits(const IngestRecord& r) const {
  return checker_.CheckLimits(r);
}

bool LatentdService::SourceIngested(const std::string& source) const {
  return ingest_.SourceIngested(source);
}

absl::StatusOr<uint64_t> LatentdService::IngestRecords(
    std::vector<IngestRecord> records, LogRange* appended, bool route) {
  LATENTD_RETURN_IF_ERROR(CheckTopics("Ingest"));
  return ingest_.Ingest(std::move(records), appended, route);
}

absl::StatusOr<std::vector<IngestRecord>> LatentdService::RecordsOf(
    const api::IngestRequest& request) const {
  LATENTD_RETURN_IF_ERROR(CheckTopics("Ingest"));
  return checker_.Records(request);
}

absl::StatusOr<api::IngestResponse> LatentdService::Ingest(
    const api::IngestRequest& request) {
  if (!request.handoff_commit().empty()) {
    if (request.documents_size() != 0) {
      return absl::InvalidArgumentError(
          "an ingest request that commits a hand-off holds no documents");
    }
    LATENTD_ASSIGN_OR_RETURN(uint64_t last,
                             ingest_.CommitHandoff(request.handoff_commit()));
    api::IngestResponse resp;
    resp.set_last_sequence(last);
    return resp;
  }
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
                           RecordsOf(request));
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
                           RecordsOf(request));
  LATENTD_ASSIGN_OR_RETURN(
      uint64_t n, replicas->Append(request.replica_of(), std::move(records)));
  api::IngestResponse resp;
  resp.set_accepted(n);
  return resp;
}

}  // namespace latentd::service
