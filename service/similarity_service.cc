#include "service/similarity_service.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/status_macros.h"

namespace latentd::service {
namespace {

// Batches queued behind a busy similarity thread before the next
// publication is made a full refresh instead (which supersedes them).
constexpr size_t kMaxQueued = 64;

uint64_t Key(std::string_view id) { return absl::HashOf(id); }

}  // namespace

SimilarityService::SimilarityService(const SimilarityServiceOptions& options,
                                     InferFn infer)
    : options_(options), infer_(std::move(infer)) {
  thread_ = std::thread([this] { Loop(); });
}

SimilarityService::~SimilarityService() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

absl::Status SimilarityService::OnPublish(const ModelView& view,
                                          TokenStore* store, bool sampling) {
  {
    absl::MutexLock lock(&mu_);
    current_.set_sweep(view.sweep);
    current_.set_view(view.version);
    if (queue_.size() >= kMaxQueued) have_full_ = false;
  }
  const std::vector<double>& alpha = view.snapshot.alpha;
  const uint64_t num_docs = store->meta().num_docs;
  const absl::Time now = absl::Now();
  const bool moved = view.sweep != last_full_sweep_;
  const bool full =
      !have_full_ || num_docs < docs_seen_ ||
      (moved && (!sampling ||
                 now - last_full_ >= absl::Seconds(options_.refresh_seconds)));
  Batch batch;
  batch.full = full;
  batch.view = view.version;
  batch.alpha = alpha;
  if (full) user_events_.clear();
  if (full || num_docs > docs_seen_) {
    LATENTD_ASSIGN_OR_RETURN(
        batch.documents,
        ReadDocumentMixtures(store, static_cast<uint32_t>(alpha.size()),
                             full ? 0 : docs_seen_));
  }
  batch.users = UserMixtures(view.users, user_events_);
  for (const Mixture& u : batch.users) {
    user_events_[u.id] = view.users.at(u.id).events;
  }
  docs_seen_ = num_docs;
  if (full) {
    have_full_ = true;
    last_full_ = now;
    last_full_sweep_ = view.sweep;
  } else if (batch.documents.empty() && batch.users.empty()) {
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  if (full) queue_.clear();  // superseded
  queue_.push_back(std::move(batch));
  return absl::OkStatus();
}

void SimilarityService::Loop() {
  for (;;) {
    Batch batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    absl::Status applied = Apply(std::move(batch));
    if (!applied.ok()) {
      {
        absl::MutexLock lock(&mu_);
        ++failures_;
      }
      log::Warning("similarity",
                   absl::StrCat("index refresh failed: ", applied.message()));
    }
  }
}

absl::Status SimilarityService::Write(Collection* c,
                                      const std::vector<Mixture>& items,
                                      const std::vector<double>& alpha,
                                      uint64_t view) {
  std::vector<SparseMixtureIndex::TopicCount> counts;
  for (const Mixture& m : items) {
    const uint64_t key = Key(m.id);
    {
      absl::MutexLock lock(&c->names_mu);
      c->names[key] = m.id;
    }
    absl::Status s;
    if (c->sparse != nullptr) {
      counts.clear();
      for (const auto& [k, n] : m.counts) {
        if (k < c->sparse->topics()) counts.emplace_back(k, n);
      }
      s = c->sparse->Upsert(key, counts, m.total, view);
    } else {
      s = c->index->Upsert(key, std::span<const float>(Smoothed(m, alpha)),
                           view);
    }
    if (!s.ok())
      return absl::Status(s.code(),
                          absl::StrCat("'", m.id, "': ", s.message()));
  }
  if (c->index != nullptr && c->index->NeedsRebuild()) {
    return c->index->Rebuild();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<SimilarityService::Collection>>
SimilarityService::Build(const std::vector<Mixture>& items,
                         const std::vector<double>& alpha,
                         uint64_t view) const {
  auto c = std::make_shared<Collection>();
  if (options_.max_topics > 0 && alpha.size() > options_.max_topics) {
    LATENTD_ASSIGN_OR_RETURN(c->sparse, SparseMixtureIndex::Create(alpha));
  } else {
    SimilarityOptions o;
    o.metric = Metric::kHellinger;
    o.dim = static_cast<uint32_t>(alpha.size());
    o.exact_threshold = options_.exact_threshold;
    LATENTD_ASSIGN_OR_RETURN(c->index, SimilarityIndex::Create(o));
  }
  LATENTD_RETURN_IF_ERROR(Write(c.get(), items, alpha, view));
  return c;
}

absl::Status SimilarityService::Apply(Batch batch) {
  if (batch.full) {
    const absl::Time start = absl::Now();
    LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<Collection> documents,
                             Build(batch.documents, batch.alpha, batch.view));
    LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<Collection> users,
                             Build(batch.users, batch.alpha, batch.view));
    absl::MutexLock lock(&mu_);
    documents_ = std::move(documents);
    users_ = std::move(users);
    ++full_refreshes_;
    last_full_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);
    index_view_ = batch.view;
    return absl::OkStatus();
  }
  std::shared_ptr<Collection> documents, users;
  {
    absl::MutexLock lock(&mu_);
    documents = documents_;
    users = users_;
  }
  if (documents == nullptr || users == nullptr) {
    return absl::FailedPreconditionError("a batch before the first refresh");
  }
  LATENTD_RETURN_IF_ERROR(
      Write(documents.get(), batch.documents, batch.alpha, batch.view));
  LATENTD_RETURN_IF_ERROR(
      Write(users.get(), batch.users, batch.alpha, batch.view));
  absl::MutexLock lock(&mu_);
  ++updates_;
  index_view_ = std::max(index_view_, batch.view);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const SimilarityService::Collection>>
SimilarityService::Current(bool documents) const {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const Collection> c = documents ? documents_ : users_;
  if (c == nullptr) {
    return absl::UnavailableError(
        "the similarity index is not built yet (the first refresh runs once "
        "the model is published): retry");
  }
  return c;
}

absl::StatusOr<uint32_t> SimilarityService::Top(uint32_t top) {
  if (top == 0) return kDefaultTop;
  if (top > kMaxTop) {
    return absl::InvalidArgumentError(absl::StrCat(
        "top must be in 1..", kMaxTop, " (0: ", kDefaultTop, "); got ", top));
  }
  return top;
}

void SimilarityService::Fill(
    const Collection& c, const SimilarityAnswer& answer, uint32_t top,
    std::string_view exclude,
    google::protobuf::RepeatedPtrField<api::Neighbor>* out,
    api::SimilarityStaleness* staleness) const {
  {
    absl::MutexLock lock(&c.names_mu);
    for (const SimilarItem& item : answer.items) {
      auto it = c.names.find(item.id);
      const std::string& id = it == c.names.end() ? "" : it->second;
      if (static_cast<uint32_t>(out->size()) >= top) break;
      if (!exclude.empty() && id == exclude) continue;
      api::Neighbor* n = out->Add();
      n->set_id(id);
      n->set_distance(item.distance);
      n->set_view(item.version);
    }
  }
  staleness->set_oldest_view(answer.oldest_version);
  staleness->set_index_oldest_view(answer.index_min_version);
  staleness->set_index_newest_view(answer.index_max_version);
  staleness->set_exact(answer.exact);
  staleness->set_indexed(c.size());
  absl::MutexLock lock(&mu_);
  *staleness->mutable_current() = current_;
}

absl::StatusOr<std::vector<float>> SimilarityService::TextTheta(
    const InferFn& infer, const api::SimilarDocumentsRequest& request) {
  api::InferDocumentRequest q;
  q.set_text(request.text());
  q.set_seed(request.seed());
  q.set_iterations(request.iterations());
  q.set_burn_in(request.burn_in());
  q.set_top(std::numeric_limits<uint32_t>::max());  // every topic
  absl::StatusOr<api::InferDocumentResponse> inferred = infer(q);
  if (!inferred.ok()) {
    return absl::Status(
        inferred.status().code(),
        absl::StrCat("SimilarDocuments text: ", inferred.status().message()));
  }
  // Every topic came back (top above K): θ in topic order.
  std::vector<float> theta(inferred->topics_size(), 0.0f);
  for (const api::TopicWeight& t : inferred->topics()) {
    if (t.topic() < theta.size()) {
      theta[t.topic()] = static_cast<float>(t.weight());
    }
  }
  return theta;
}

absl::StatusOr<SimilarityAnswer> SimilarityService::QueryTheta(
    const Collection& c, const google::protobuf::RepeatedField<float>& theta,
    uint32_t top, std::string_view exclude) {
  absl::StatusOr<SimilarityAnswer> answer = c.Query(
      std::span<const float>(theta.data(), static_cast<size_t>(theta.size())),
      exclude.empty() ? top : top + 1);
  if (!answer.ok()) {
    return absl::Status(answer.status().code(),
                        absl::StrCat("a mixture (theta) of ", theta.size(),
                                     " topics: ", answer.status().message()));
  }
  return answer;
}

absl::StatusOr<api::SimilarDocumentsResponse>
SimilarityService::SimilarDocuments(
    const api::SimilarDocumentsRequest& request) const {
  LATENTD_ASSIGN_OR_RETURN(const uint32_t top, Top(request.top()));
  const bool by_document = !request.document().empty();
  const int given =
      by_document + !request.text().empty() + (request.theta_size() > 0);
  if (given != 1) {
    return absl::InvalidArgumentError(
        given > 1 ? (request.theta_size() == 0
                         ? "SimilarDocuments takes a document id or a text, "
                           "not both"
                         : "SimilarDocuments takes a mixture (theta) alone, "
                           "without a document id or a text")
                  : "SimilarDocuments needs a document id (document) or a "
                    "text (text); both are empty");
  }
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const Collection> c,
                           Current(/*documents=*/true));
  absl::StatusOr<SimilarityAnswer> answer;
  if (request.theta_size() > 0) {
    answer = QueryTheta(*c, request.theta(), top, request.exclude());
  } else if (by_document) {
    answer = c->QueryById(Key(request.document()), top);
    if (answer.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat(
          "document '", request.document(),
          "' is not in the similarity index (", c->size(),
          " documents): not a document id of this node's model, or merged "
          "after the index's last update (see docs/api.md, staleness)"));
    }
  } else {
    LATENTD_ASSIGN_OR_RETURN(std::vector<float> theta,
                             TextTheta(infer_, request));
    answer = c->Query(std::span<const float>(theta), top);
  }
  LATENTD_RETURN_IF_ERROR(answer.status());
  api::SimilarDocumentsResponse resp;
  Fill(*c, *answer, top, request.exclude(), resp.mutable_neighbors(),
       resp.mutable_staleness());
  return resp;
}

absl::StatusOr<api::SimilarUsersResponse> SimilarityService::SimilarUsers(
    const api::SimilarUsersRequest& request) const {
  LATENTD_ASSIGN_OR_RETURN(const uint32_t top, Top(request.top()));
  if (request.user().empty() == (request.theta_size() == 0)) {
    return absl::InvalidArgumentError(
        request.user().empty()
            ? "SimilarUsers needs a user id (user)"
            : "SimilarUsers takes a user id or a mixture (theta), not both");
  }
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const Collection> c,
                           Current(/*documents=*/false));
  if (request.theta_size() > 0) {
    LATENTD_ASSIGN_OR_RETURN(
        SimilarityAnswer answer,
        QueryTheta(*c, request.theta(), top, request.exclude()));
    api::SimilarUsersResponse resp;
    Fill(*c, answer, top, request.exclude(), resp.mutable_neighbors(),
         resp.mutable_staleness());
    return resp;
  }
  absl::StatusOr<SimilarityAnswer> answer =
      c->QueryById(Key(request.user()), top);
  if (answer.status().code() == absl::StatusCode::kNotFound) {
    return absl::NotFoundError(absl::StrCat(
        "user '", request.user(), "' is not in the similarity index (",
        c->size(),
        " users): unknown, its events not merged yet, or merged after the "
        "index's last update (see docs/api.md, staleness)"));
  }
  LATENTD_RETURN_IF_ERROR(answer.status());
  api::SimilarUsersResponse resp;
  Fill(*c, *answer, top, "", resp.mutable_neighbors(),
       resp.mutable_staleness());
  return resp;
}

SimilarityStats SimilarityService::Stats() const {
  const auto [documents, users] = Sizes();
  absl::MutexLock lock(&mu_);
  return SimilarityStats{.documents = documents,
                         .users = users,
                         .full_refreshes = full_refreshes_,
                         .updates = updates_,
                         .failures = failures_,
                         .last_full_seconds = last_full_seconds_,
                         .index_view = index_view_,
                         .published_view = current_.view()};
}

std::pair<size_t, size_t> SimilarityService::Sizes() const {
  absl::MutexLock lock(&mu_);
  return {documents_ == nullptr ? 0 : documents_->size(),
          users_ == nullptr ? 0 : users_->size()};
}

}  // namespace latentd::service
