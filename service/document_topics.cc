#include "service/document_topics.h"

#include <algorithm>
#include <numeric>

#include "base/status_macros.h"
#include "service/similarity_mixtures.h"

namespace latentd::service {

absl::StatusOr<std::shared_ptr<const DocumentTopics>> DocumentTopics::Collect(
    TokenStore* store, uint64_t sweep, uint64_t view) {
  auto out = std::make_shared<DocumentTopics>();
  out->sweep_ = sweep;
  out->view_ = view;
  std::vector<uint32_t> dense(store->meta().num_topics);
  // Key -> its latest document's position in keys_ while reading (a later
  // document with the same key replaces the earlier one's entry).
  absl::flat_hash_map<std::string, uint32_t> latest;
  std::vector<bool> replaced;
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        std::string key =
            DocumentKeyName(d < batch.doc_ids.size() ? batch.doc_ids[d] : "",
                            d < batch.users.size() ? batch.users[d] : "");
        if (key.empty()) return;
        std::fill(dense.begin(), dense.end(), 0);
        for (TopicId t : batch.doc_topics(d)) {
          if (t >= dense.size()) dense.resize(t + 1, 0);
          ++dense[t];
        }
        for (uint32_t k = 0; k < dense.size(); ++k) {
          if (dense[k] == 0) continue;
          out->topics_.push_back(k);
          out->counts_.push_back(dense[k]);
        }
        out->offsets_.push_back(out->topics_.size());
        out->tokens_.push_back(batch.doc_length(d));
        const uint32_t i = static_cast<uint32_t>(out->keys_.size());
        auto [it, fresh] = latest.try_emplace(key, i);
        if (!fresh) {
          replaced[it->second] = true;
          it->second = i;
        }
        replaced.push_back(false);
        out->keys_.push_back(std::move(key));
      }));
  for (uint32_t i = 0; i < out->keys_.size(); ++i) {
    if (!replaced[i]) out->index_.emplace(out->keys_[i], i);
  }
  return std::shared_ptr<const DocumentTopics>(std::move(out));
}

std::optional<DocumentTopics::Document> DocumentTopics::Find(
    std::string_view key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return At(it->second);
}

DocumentTopics::Document DocumentTopics::At(uint32_t i) const {
  const uint64_t begin = offsets_[i], end = offsets_[i + 1];
  Document d;
  d.key = keys_[i];
  d.tokens = tokens_[i];
  d.topics = std::span<const uint32_t>(topics_).subspan(begin, end - begin);
  d.counts = std::span<const uint32_t>(counts_).subspan(begin, end - begin);
  return d;
}

std::vector<DocumentTopics::Ranked> DocumentTopics::TopDocuments(
    uint32_t topic, size_t top, std::span<const double> alpha) const {
  const double alpha_sum = std::accumulate(alpha.begin(), alpha.end(), 0.0);
  const double alpha_k = topic < alpha.size() ? alpha[topic] : 0.0;
  struct Candidate {
    uint32_t index;
    uint32_t count;
    double weight;
  };
  std::vector<Candidate> all;
  all.reserve(index_.size());
  for (const auto& [key, i] : index_) {
    const Document d = At(i);
    uint32_t n = 0;
    auto it = std::lower_bound(d.topics.begin(), d.topics.end(), topic);
    if (it != d.topics.end() && *it == topic) {
      n = d.counts[static_cast<size_t>(it - d.topics.begin())];
    }
    const double denom = static_cast<double>(d.tokens) + alpha_sum;
    all.push_back({i, n, denom > 0 ? (n + alpha_k) / denom : 0.0});
  }
  auto better = [this](const Candidate& a, const Candidate& b) {
    if (a.weight != b.weight) return a.weight > b.weight;
    if (a.count != b.count) return a.count > b.count;
    return keys_[a.index] < keys_[b.index];
  };
  const size_t n = std::min(top, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(n),
                    all.end(), better);
  std::vector<Ranked> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back({all[i].index, all[i].weight});
  return out;
}

}  // namespace latentd::service
