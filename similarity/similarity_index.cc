#include "similarity/similarity_index.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace latentd {

SimilarityIndex::SimilarityIndex(const SimilarityOptions& options)
    : metric_(options.metric),
      dim_(options.dim),
      exact_threshold_(options.exact_threshold),
      build_threads_(options.build_threads),
      hnsw_params_(options.hnsw),
      store_(options.metric, options.dim) {}

absl::StatusOr<std::unique_ptr<SimilarityIndex>> SimilarityIndex::Create(
    const SimilarityOptions& options) {
  if (options.dim == 0) {
    return absl::InvalidArgumentError("similarity index of dimension 0");
  }
  if (options.build_threads < 1) {
    return absl::InvalidArgumentError("build_threads must be >= 1");
  }
  // The graph's own checks, on a graph of one item's room.
  auto probe = HnswGraph::Create(options.metric, options.dim, options.hnsw, 1);
  if (!probe.ok()) return probe.status();
  return std::unique_ptr<SimilarityIndex>(new SimilarityIndex(options));
}

absl::Status SimilarityIndex::Upsert(uint64_t id, std::span<const float> vector,
                                     uint64_t version) {
  std::vector<float> prepared(dim_);
  absl::Status status = PrepareVector(metric_, dim_, vector, prepared.data());
  if (!status.ok()) return status;
  return UpsertPrepared(id, prepared.data(), version);
}

absl::Status SimilarityIndex::Upsert(uint64_t id,
                                     std::span<const double> vector,
                                     uint64_t version) {
  std::vector<float> prepared(dim_);
  absl::Status status = PrepareVector(metric_, dim_, vector, prepared.data());
  if (!status.ok()) return status;
  return UpsertPrepared(id, prepared.data(), version);
}

absl::Status SimilarityIndex::UpsertPrepared(uint64_t id, const float* prepared,
                                             uint64_t version) {
  absl::WriterMutexLock lock(&mu_);
  // The graph first: if hnswlib fails, nothing changed.
  if (graph_ != nullptr) {
    absl::Status status = graph_->Upsert(id, prepared);
    if (!status.ok()) return status;
  }
  store_.Upsert(id, prepared, version);
  if (rebuilding_) journal_.insert(id);
  return absl::OkStatus();
}

absl::Status SimilarityIndex::Remove(uint64_t id) {
  absl::WriterMutexLock lock(&mu_);
  if (store_.Find(id) == nullptr) {
    return absl::NotFoundError(absl::StrCat("no item ", id));
  }
  if (graph_ != nullptr) {
    absl::Status status = graph_->Remove(id);
    if (!status.ok()) return status;
  }
  store_.Remove(id);
  if (rebuilding_) journal_.insert(id);
  return absl::OkStatus();
}

absl::Status SimilarityIndex::CheckN(size_t n) const {
  if (n < 1 || n > kMaxResults) {
    return absl::InvalidArgumentError(
        absl::StrCat("n = ", n, " outside [1, ", kMaxResults, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SimilarityAnswer> SimilarityIndex::Query(
    std::span<const float> vector, size_t n, SearchMode mode) const {
  absl::Status status = CheckN(n);
  if (!status.ok()) return status;
  std::vector<float> prepared(dim_);
  status = PrepareVector(metric_, dim_, vector, prepared.data());
  if (!status.ok()) return status;
  absl::ReaderMutexLock lock(&mu_);
  return Answer(prepared.data(), n, mode, std::nullopt);
}

absl::StatusOr<SimilarityAnswer> SimilarityIndex::Query(
    std::span<const double> vector, size_t n, SearchMode mode) const {
  std::vector<float> floats(vector.begin(), vector.end());
  return Query(std::span<const float>(floats), n, mode);
}

absl::StatusOr<SimilarityAnswer> SimilarityIndex::QueryById(
    uint64_t id, size_t n, SearchMode mode) const {
  absl::Status status = CheckN(n);
  if (!status.ok()) return status;
  absl::ReaderMutexLock lock(&mu_);
  const float* stored = store_.Find(id);
  if (stored == nullptr) {
    return absl::NotFoundError(absl::StrCat("no item ", id));
  }
  // The store may not change under the reader lock, so `stored` stays put.
  return Answer(stored, n, mode, id);
}

absl::StatusOr<SimilarityAnswer> SimilarityIndex::Answer(
    const float* prepared, size_t n, SearchMode mode,
    std::optional<uint64_t> exclude) const {
  SimilarityAnswer answer;
  answer.exact = mode == SearchMode::kExact || graph_ == nullptr ||
                 store_.size() < exact_threshold_;
  std::vector<ScoredId> hits;
  if (answer.exact) {
    hits = store_.Scan(prepared, n, exclude);
  } else {
    auto searched = graph_->Search(prepared, n, exclude);
    if (!searched.ok()) return searched.status();
    hits = std::move(*searched);
  }
  answer.items.reserve(hits.size());
  for (const ScoredId& hit : hits) {
    const uint64_t version = store_.VersionOf(hit.id).value_or(0);
    answer.items.push_back(
        {hit.id, ReportedDistance(metric_, hit.raw), version});
  }
  if (!answer.items.empty()) {
    answer.oldest_version =
        std::min_element(answer.items.begin(), answer.items.end(),
                         [](const SimilarItem& a, const SimilarItem& b) {
                           return a.version < b.version;
                         })
            ->version;
  }
  answer.index_min_version = store_.min_version();
  answer.index_max_version = store_.max_version();
  return answer;
}

absl::Status SimilarityIndex::Rebuild() {
  HnswParams params;
  {
    absl::WriterMutexLock lock(&mu_);
    if (rebuilding_) {
      return absl::FailedPreconditionError("a rebuild is already running");
    }
    rebuilding_ = true;
    journal_.clear();
    params = hnsw_params_;
  }
  // Writes from here on are journaled, so a copy taken later is no worse.
  std::unique_ptr<VectorStore> snapshot;
  {
    absl::ReaderMutexLock lock(&mu_);
    snapshot = std::make_unique<VectorStore>(store_);
  }
  auto built = HnswGraph::Build(metric_, params, *snapshot, build_threads_);
  snapshot.reset();
  std::unique_ptr<HnswGraph> old;
  absl::Status status = built.status();
  {
    absl::WriterMutexLock lock(&mu_);
    if (status.ok()) {
      std::unique_ptr<HnswGraph>& graph = *built;
      for (uint64_t id : journal_) {
        const float* current = store_.Find(id);
        const absl::Status s =
            current != nullptr ? graph->Upsert(id, current) : graph->Remove(id);
        if (!s.ok() && !absl::IsNotFound(s)) {
          status = s;
          break;
        }
      }
      if (status.ok()) {
        graph->SetEfSearch(hnsw_params_.ef_search);
        old = std::exchange(graph_, std::move(graph));
      }
    }
    rebuilding_ = false;
    journal_.clear();
  }
  return status;  // `old` is freed here, outside the lock
}

bool SimilarityIndex::NeedsRebuild() const {
  absl::ReaderMutexLock lock(&mu_);
  if (rebuilding_ || store_.size() < exact_threshold_) return false;
  if (graph_ == nullptr) return true;
  return graph_->deleted_items() > graph_->live_items() / 4;
}

void SimilarityIndex::SetEfSearch(uint32_t ef) {
  absl::WriterMutexLock lock(&mu_);
  hnsw_params_.ef_search = ef;
  if (graph_ != nullptr) graph_->SetEfSearch(ef);
}

SimilarityStats SimilarityIndex::Stats() const {
  absl::ReaderMutexLock lock(&mu_);
  SimilarityStats stats;
  stats.items = store_.size();
  stats.has_graph = graph_ != nullptr;
  stats.rebuilding = rebuilding_;
  stats.store_bytes = store_.MemoryBytes();
  if (graph_ != nullptr) {
    stats.graph_live = graph_->live_items();
    stats.graph_deleted = graph_->deleted_items();
    stats.graph_bytes = graph_->MemoryBytes();
  }
  return stats;
}

size_t SimilarityIndex::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return store_.size();
}

}  // namespace latentd
