// The document table of GetDocumentTopics and TopicDocuments
// (service/document_topics.h; the calls are in service_queries.cc): read
// from the store by the training thread at publication.
#include "base/status_macros.h"
#include "service/latentd_service.h"

namespace latentd::service {
absl::Status LatentdService::MaybeCollectDocuments(const ModelView& view) {
  const absl::Time now = absl::Now();
  bool have;
  {
    absl::MutexLock lock(&view_mu_);
    have = documents_ != nullptr;
  }
  const bool due =
      !have || SamplingStopped() ||
      now - documents_at_ >= absl::Seconds(options_.similarity.refresh_seconds);
  if (!due) return absl::OkStatus();
  LATENTD_ASSIGN_OR_RETURN(
      std::shared_ptr<const DocumentTopics> table,
      DocumentTopics::Collect(trainer_->store(), view.sweep, view.version));
  documents_at_ = now;
  absl::MutexLock lock(&view_mu_);
  documents_ = std::move(table);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const DocumentTopics>>
LatentdService::Documents() const {
  absl::MutexLock lock(&view_mu_);
  if (documents_ == nullptr) {
    return absl::UnavailableError("the document table is not read yet");
  }
  return documents_;
}

}  // namespace latentd::service
