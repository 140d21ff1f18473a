// SimilarityService: a latentd node's similar documents and users (the
// SimilarDocuments and SimilarUsers calls, docs/api.md "Similar documents
// and users"): one SimilarityIndex (similarity/) of the documents' topic
// mixtures θ_d and one of the users' θ_u, ranked by Hellinger distance,
// kept up to date from the published model by a thread of its own.
//
// Feeding: the training thread calls OnPublish() with every view it
// publishes. There, on that thread (the token store is the training
// thread's), it reads what changed into a batch for the similarity thread:
//   - a full refresh (every document's and user's θ, at this view) when
//     there is no index yet, when the model moved and refresh_seconds have
//     passed since the last full refresh, or when sampling has stopped and
//     the model moved since it;
//   - else, when documents were merged, the new documents' θ and the θ of
//     the users whose events changed.
// The similarity thread builds a full refresh into new indexes (the HNSW
// graph too, above the exact threshold) and swaps them in; it writes the
// smaller batches into the live ones, rebuilding a graph when the index
// asks (SimilarityIndex::NeedsRebuild). Queries meanwhile read the indexes
// as they are.
//
// Staleness: every item carries the model view its θ was computed at, and
// every answer reports it per neighbour, the oldest and newest in the
// index and the view published now. While the node samples, an item's θ
// is at most refresh_seconds (plus one refresh's build) older than the
// published model; once sampling stops the index is refreshed at the
// final model. A merged document is in the index once the similarity
// thread has applied the batch of the publication that made it visible.
//
// Ids: a document is found by DocumentKeyName (similarity_mixtures.h); two
// documents with the same id are one item (the later in the store wins).
//
// Thread-safety: SimilarDocuments, SimilarUsers and Stats may be called
// from any thread at once; OnPublish from one thread at a time (the
// training thread). The destructor stops the similarity thread.
#ifndef LATENTD_SERVICE_SIMILARITY_SERVICE_H_
#define LATENTD_SERVICE_SIMILARITY_SERVICE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "corpora/token_store.h"
#include "service/api.pb.h"
#include "service/model_view.h"
#include "service/similarity_mixtures.h"
#include "similarity/similarity_index.h"
#include "similarity/sparse_mixture_index.h"

namespace latentd::service {

struct SimilarityServiceOptions {
  // While the node samples, the index is refreshed from the model at most
  // this often (0: after every publication).
  double refresh_seconds = 30;
  // Below this many items a query scans them all (SimilarityOptions).
  size_t exact_threshold = 10000;
  // Up to this many topics the indexes keep each item's θ as K floats
  // (an exact scan, then an HNSW graph). Above it they keep each item's
  // non-zero topic counts and answer by an exact scan whose cost is the
  // items' non-zeros (similarity/sparse_mixture_index.h): K floats per
  // item would grow memory and time with K × documents. 0: always dense.
  uint32_t max_topics = 1024;
};

// What /metrics shows of the similarity service (SimilarityService::Stats).
struct SimilarityStats {
  size_t documents = 0;  // items indexed
  size_t users = 0;
  uint64_t full_refreshes = 0;   // every θ rebuilt into new indexes
  uint64_t updates = 0;          // new documents' and changed users' θ written
  uint64_t failures = 0;         // refreshes or updates that failed
  double last_full_seconds = 0;  // how long the last full refresh took
  uint64_t index_view = 0;       // the model view of the last batch applied
  uint64_t published_view = 0;   // the view published now
};

class SimilarityService {
 public:
  static constexpr uint32_t kMaxTop = 1000;
  static constexpr uint32_t kDefaultTop = 10;

  // Infers θ of a text against the published model (LatentdService::
  // InferDocument, called with every topic asked for).
  using InferFn = std::function<absl::StatusOr<api::InferDocumentResponse>(
      const api::InferDocumentRequest&)>;

  // Starts the similarity thread.
  SimilarityService(const SimilarityServiceOptions& options, InferFn infer);
  ~SimilarityService();
  SimilarityService(const SimilarityService&) = delete;
  SimilarityService& operator=(const SimilarityService&) = delete;

  // Training thread, after publishing `view`, whose counts the store's
  // current version holds. `sampling`: the node still samples. Fails with
  // the store's error (the index then stays as it was; the next call
  // tries again).
  absl::Status OnPublish(const ModelView& view, TokenStore* store,
                         bool sampling);

  // This node's documents nearest to the request's document, text or
  // mixture (theta), `exclude` left out (the `local` flag is the caller's:
  // this never asks other nodes). kInvalidArgument for a request without
  // exactly one of document, text and theta, top above kMaxTop, or a theta
  // that is not K long; kNotFound for a document not in the index; the
  // inference's error for a text; kUnavailable before the first refresh
  // is built.
  absl::StatusOr<api::SimilarDocumentsResponse> SimilarDocuments(
      const api::SimilarDocumentsRequest& request) const;
  // The same for users, by a user's id or a mixture: kInvalidArgument
  // unless exactly one of user and theta is given, or for top above
  // kMaxTop; kNotFound for a user not in the index.
  absl::StatusOr<api::SimilarUsersResponse> SimilarUsers(
      const api::SimilarUsersRequest& request) const;

  // θ (every topic, in topic order) of request's text as `infer` gives it
  // (its seed, iterations and burn_in); the inference's error otherwise.
  static absl::StatusOr<std::vector<float>> TextTheta(
      const InferFn& infer, const api::SimilarDocumentsRequest& request);

  // Items indexed (documents, users), for tests and Status.
  std::pair<size_t, size_t> Sizes() const;
  // The counts above, for /metrics.
  SimilarityStats Stats() const;

 private:
  // One kind of item: its index (dense, or sparse above max_topics) and
  // the names of its keys.
  struct Collection {
    std::unique_ptr<SimilarityIndex> index;
    std::unique_ptr<SparseMixtureIndex> sparse;
    size_t size() const { return sparse ? sparse->size() : index->size(); }
    absl::StatusOr<SimilarityAnswer> Query(std::span<const float> theta,
                                           size_t n) const {
      return sparse ? sparse->Query(theta, n) : index->Query(theta, n);
    }
    absl::StatusOr<SimilarityAnswer> QueryById(uint64_t id, size_t n) const {
      return sparse ? sparse->QueryById(id, n) : index->QueryById(id, n);
    }
    mutable absl::Mutex names_mu;
    absl::flat_hash_map<uint64_t, std::string> names ABSL_GUARDED_BY(names_mu);
  };
  // What OnPublish hands the similarity thread.
  struct Batch {
    bool full = false;
    uint64_t view = 0;
    std::vector<double> alpha;  // the view's α (K entries)
    std::vector<Mixture> documents;
    std::vector<Mixture> users;
  };

  void Loop();
  absl::Status Apply(Batch batch);
  absl::StatusOr<std::shared_ptr<Collection>> Build(
      const std::vector<Mixture>& items, const std::vector<double>& alpha,
      uint64_t view) const;
  // Writes `items` into c: as θ smoothed with `alpha` into a dense index,
  // as counts into a sparse one (which smooths with its own α).
  static absl::Status Write(Collection* c, const std::vector<Mixture>& items,
                            const std::vector<double>& alpha, uint64_t view);
  absl::StatusOr<std::shared_ptr<const Collection>> Current(
      bool documents) const;
  // The answer's neighbours (its first `top` but `exclude`) and staleness
  // from `answer`.
  void Fill(const Collection& c, const SimilarityAnswer& answer, uint32_t top,
            std::string_view exclude,
            google::protobuf::RepeatedPtrField<api::Neighbor>* out,
            api::SimilarityStaleness* staleness) const;
  // The nearest `top` items of `c` to `theta` (one more when an id is to be
  // excluded); kInvalidArgument for a mixture of the wrong size.
  static absl::StatusOr<SimilarityAnswer> QueryTheta(
      const Collection& c, const google::protobuf::RepeatedField<float>& theta,
      uint32_t top, std::string_view exclude);
  static absl::StatusOr<uint32_t> Top(uint32_t top);

  const SimilarityServiceOptions options_;
  const InferFn infer_;

  // The training thread's (OnPublish).
  absl::Time last_full_ = absl::InfinitePast();
  uint64_t last_full_sweep_ = 0;
  bool have_full_ = false;
  uint64_t docs_seen_ = 0;  // store documents read so far
  absl::flat_hash_map<std::string, uint64_t> user_events_;

  mutable absl::Mutex mu_;
  std::deque<Batch> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<Collection> documents_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Collection> users_ ABSL_GUARDED_BY(mu_);
  api::ModelVersion current_ ABSL_GUARDED_BY(mu_);
  // Kept by the similarity thread (Apply) for Stats.
  uint64_t full_refreshes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t updates_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  double last_full_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t index_view_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_SIMILARITY_SERVICE_H_
