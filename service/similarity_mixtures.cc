#include "service/similarity_mixtures.h"

#include <numeric>

#include "base/status_macros.h"

namespace latentd::service {
namespace {

// θ from sparse or dense counts: (n_k + α_k) / (n + Σα).
template <typename Counts>
std::vector<float> Smoothed(const Counts& counts, double total,
                            std::span<const double> alpha) {
  const double alpha_sum = std::accumulate(alpha.begin(), alpha.end(), 0.0);
  std::vector<float> theta(alpha.size());
  for (size_t k = 0; k < alpha.size(); ++k) {
    theta[k] = static_cast<float>(alpha[k] / (total + alpha_sum));
  }
  for (const auto& [k, n] : counts) {
    if (k < alpha.size()) {
      theta[k] = static_cast<float>((static_cast<double>(n) + alpha[k]) /
                                    (total + alpha_sum));
    }
  }
  return theta;
}

}  // namespace

std::string DocumentKeyName(std::string_view doc_id, std::string_view user) {
  if (!user.empty()) return "";
  uint64_t sequence, events;
  if (ParseIngestDocId(doc_id, &sequence, &events)) {
    // "~<sequence>~<events>~<client id>"
    const size_t a = doc_id.find('~', 1);
    const size_t b = doc_id.find('~', a + 1);
    return std::string(doc_id.substr(b + 1));
  }
  return std::string(doc_id);
}

absl::StatusOr<std::vector<Mixture>> ReadDocumentMixtures(
    TokenStore* store, std::span<const double> alpha, uint64_t first_doc) {
  std::vector<Mixture> out;
  std::vector<std::pair<uint32_t, uint64_t>> counts;
  std::vector<uint64_t> dense(alpha.size());
  LATENTD_RETURN_IF_ERROR(ForEachDocument(store, [&](const DocBatch& batch,
                                                     size_t d) {
    if (batch.first_doc + d < first_doc || batch.doc_length(d) == 0) {
      return;
    }
    std::string name =
        DocumentKeyName(d < batch.doc_ids.size() ? batch.doc_ids[d] : "",
                        d < batch.users.size() ? batch.users[d] : "");
    if (name.empty()) return;
    std::fill(dense.begin(), dense.end(), 0);
    for (TopicId t : batch.doc_topics(d)) {
      if (t < dense.size()) ++dense[t];
    }
    counts.clear();
    for (uint32_t k = 0; k < dense.size(); ++k) {
      if (dense[k] != 0) counts.emplace_back(k, dense[k]);
    }
    out.push_back(
        {std::move(name),
         Smoothed(counts, static_cast<double>(batch.doc_length(d)), alpha)});
  }));
  return out;
}

std::vector<Mixture> UserMixtures(
    const absl::flat_hash_map<std::string, UserTopics>& users,
    std::span<const double> alpha,
    const absl::flat_hash_map<std::string, uint64_t>& seen) {
  std::vector<Mixture> out;
  for (const auto& [user, u] : users) {
    auto it = seen.find(user);
    if (it != seen.end() && it->second == u.events) continue;
    out.push_back(
        {user, Smoothed(u.topic_counts, static_cast<double>(u.tokens), alpha)});
  }
  return out;
}

}  // namespace latentd::service
