// The one translation unit that includes hnswlib (see hnsw_graph.h).
#include "similarity/hnsw_graph.h"

#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "similarity/internal/exception_guard.h"

namespace latentd {

struct HnswGraph::Impl {
  std::unique_ptr<hnswlib::SpaceInterface<float>> space;  // outlives hnsw
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> hnsw;

  bool Contains(uint64_t id) const { return hnsw->label_lookup_.count(id) > 0; }
  // Room for one more new item (doubling); not concurrent with anything.
  void Reserve() {
    if (hnsw->cur_element_count >= hnsw->max_elements_) {
      hnsw->resizeIndex(std::max<size_t>(1024, 2 * hnsw->max_elements_));
    }
  }
};

HnswGraph::HnswGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HnswGraph::~HnswGraph() = default;

absl::StatusOr<std::unique_ptr<HnswGraph>> HnswGraph::Create(
    Metric metric, uint32_t dim, const HnswParams& params, size_t capacity) {
  if (dim == 0) return absl::InvalidArgumentError("dimension 0");
  if (params.m < 2 || params.m > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("HNSW m ", params.m, " outside [2, 1024]"));
  }
  auto impl = std::make_unique<Impl>();
  if (IsEuclidean(metric)) {
    impl->space = std::make_unique<hnswlib::L2Space>(dim);
  } else {
    impl->space = std::make_unique<hnswlib::InnerProductSpace>(dim);
  }
  absl::Status status = GuardExceptions("hnswlib create", [&] {
    impl->hnsw = std::make_unique<hnswlib::HierarchicalNSW<float>>(
        impl->space.get(), std::max<size_t>(capacity, 1), params.m,
        params.ef_construction, params.seed);
    impl->hnsw->setEf(std::max<uint32_t>(params.ef_search, 1));
  });
  if (!status.ok()) return status;
  return std::unique_ptr<HnswGraph>(new HnswGraph(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<HnswGraph>> HnswGraph::Build(
    Metric metric, const HnswParams& params, const VectorStore& store,
    int threads) {
  const size_t count = store.size();
  auto graph = Create(metric, store.dim(), params, count + count / 8 + 16);
  if (!graph.ok()) return graph.status();
  hnswlib::HierarchicalNSW<float>& hnsw = *(*graph)->impl_->hnsw;
  if (count == 0) return graph;
  // The entry point first, alone, as hnswlib's own bindings do.
  absl::Status status = GuardExceptions("hnswlib build", [&] {
    hnsw.addPoint(store.vector_at(0), store.id_at(0));
  });
  if (!status.ok()) return status;
  std::atomic<size_t> next{1};
  std::atomic<bool> failed{false};
  absl::Mutex mu;
  absl::Status first_error;
  auto worker = [&] {
    constexpr size_t kChunk = 64;
    while (!failed.load(std::memory_order_relaxed)) {
      const size_t begin = next.fetch_add(kChunk);
      if (begin >= count) return;
      const size_t end = std::min(count, begin + kChunk);
      absl::Status s = GuardExceptions("hnswlib build", [&] {
        for (size_t i = begin; i < end; ++i) {
          hnsw.addPoint(store.vector_at(i), store.id_at(i));
        }
      });
      if (!s.ok()) {
        absl::MutexLock lock(&mu);
        if (first_error.ok()) first_error = s;
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(threads, 1); ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (!first_error.ok()) return first_error;
  return graph;
}

absl::Status HnswGraph::Upsert(uint64_t id, const float* prepared) {
  return GuardExceptions("hnswlib upsert", [&] {
    if (!impl_->Contains(id)) impl_->Reserve();
    impl_->hnsw->addPoint(prepared, id);
  });
}

absl::Status HnswGraph::Remove(uint64_t id) {
  auto it = impl_->hnsw->label_lookup_.find(id);
  if (it == impl_->hnsw->label_lookup_.end() ||
      impl_->hnsw->isMarkedDeleted(it->second)) {
    return absl::NotFoundError(absl::StrCat("id ", id, " not in the graph"));
  }
  return GuardExceptions("hnswlib remove",
                         [&] { impl_->hnsw->markDelete(id); });
}

absl::StatusOr<std::vector<ScoredId>> HnswGraph::Search(
    const float* query, size_t n, std::optional<uint64_t> exclude) const {
  std::vector<ScoredId> hits;
  if (n == 0) return hits;
  const size_t k = n + (exclude ? 1 : 0);
  std::priority_queue<std::pair<float, hnswlib::labeltype>> queue;
  absl::Status status = GuardExceptions(
      "hnswlib search", [&] { queue = impl_->hnsw->searchKnn(query, k); });
  if (!status.ok()) return status;
  hits.reserve(queue.size());
  while (!queue.empty()) {  // farthest first
    const auto& [raw, id] = queue.top();
    if (!exclude || id != *exclude) hits.push_back({raw, id});
    queue.pop();
  }
  std::sort(hits.begin(), hits.end());
  if (hits.size() > n) hits.resize(n);
  return hits;
}

void HnswGraph::SetEfSearch(uint32_t ef) {
  impl_->hnsw->setEf(std::max<uint32_t>(ef, 1));
}

size_t HnswGraph::live_items() const {
  return impl_->hnsw->cur_element_count - impl_->hnsw->num_deleted_;
}

size_t HnswGraph::deleted_items() const { return impl_->hnsw->num_deleted_; }

size_t HnswGraph::MemoryBytes() const {
  const hnswlib::HierarchicalNSW<float>& h = *impl_->hnsw;
  size_t upper_links = 0;
  for (size_t i = 0; i < h.cur_element_count; ++i) {
    upper_links +=
        static_cast<size_t>(h.element_levels_[i]) * h.size_links_per_element_;
  }
  const size_t per_capacity = h.size_data_per_element_ + sizeof(char*) +
                              sizeof(int) + sizeof(std::mutex);
  // std::unordered_map: a node (next pointer, key, value, cached hash) and
  // a bucket pointer per item.
  const size_t label_map = h.label_lookup_.size() * (4 * sizeof(void*) + 8) +
                           h.label_lookup_.bucket_count() * sizeof(void*);
  const size_t update_locks =
      h.link_list_update_locks_.size() * sizeof(std::mutex);
  const size_t visited = h.max_elements_ * sizeof(hnswlib::vl_type);
  return h.max_elements_ * per_capacity + upper_links + label_map +
         update_locks + visited;
}

}  // namespace latentd
