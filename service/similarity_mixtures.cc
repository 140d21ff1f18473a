#include "service/similarity_mixtures.h"

#include "base/status_macros.h"
#include "similarity/sparse_mixture_index.h"

namespace latentd::service {

std::vector<float> Smoothed(const Mixture& m, std::span<const double> alpha) {
  return SmoothedMixture(m.counts, m.total, alpha);
}

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

absl::StatusOr<std::vector<Mixture>> ReadDocumentMixtures(TokenStore* store,
                                                          uint32_t num_topics,
                                                          uint64_t first_doc) {
  std::vector<Mixture> out;
  // A document's counts, kept dense between documents and cleared by
  // its own topics, so a document costs its length, not K.
  std::vector<uint64_t> dense(num_topics);
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        if (batch.first_doc + d < first_doc || batch.doc_length(d) == 0) {
          return;
        }
        std::string name =
            DocumentKeyName(d < batch.doc_ids.size() ? batch.doc_ids[d] : "",
                            d < batch.users.size() ? batch.users[d] : "");
        if (name.empty()) return;
        Mixture m{
            .id = std::move(name), .counts = {}, .total = batch.doc_length(d)};
        for (TopicId t : batch.doc_topics(d)) {
          if (t < dense.size() && dense[t]++ == 0) m.counts.emplace_back(t, 0);
        }
        for (auto& [k, n] : m.counts) {
          n = dense[k];
          dense[k] = 0;
        }
        out.push_back(std::move(m));
      }));
  return out;
}

std::vector<Mixture> UserMixtures(
    const absl::flat_hash_map<std::string, UserTopics>& users,
    const absl::flat_hash_map<std::string, uint64_t>& seen) {
  std::vector<Mixture> out;
  for (const auto& [user, u] : users) {
    auto it = seen.find(user);
    if (it != seen.end() && it->second == u.events) continue;
    Mixture m{.id = user, .counts = {}, .total = u.tokens};
    for (const auto& [k, n] : u.topic_counts) {
      if (n > 0) m.counts.emplace_back(k, n);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace latentd::service
