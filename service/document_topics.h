// DocumentTopics: every document's topic counts n_dk, read from a node's
// token store, for the GetDocumentTopics and TopicDocuments calls
// (docs/api.md "Documents"). A document is found by its key, the id
// SimilarDocuments takes (DocumentKeyName, similarity_mixtures.h): a
// training document's corpus id (its source: the file name, or the line
// number of a "lines" corpus) or an ingested document's client id. Two
// documents with the same key are one (the later in the store wins).
// Users' documents have no key (they are found as users).
//
// θ_dk = (n_dk + α_k) / (n_d + Σα), smoothed as the model is.
//
// Thread-safety: immutable once Collect returns; any number of threads may
// read it. Collect reads the store, which must not be used by anyone else
// meanwhile (the training thread, between sweeps).
#ifndef LATENTD_SERVICE_DOCUMENT_TOPICS_H_
#define LATENTD_SERVICE_DOCUMENT_TOPICS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "corpora/token_store.h"

namespace latentd::service {

class DocumentTopics {
 public:
  // One document's counts: its tokens n_d and its non-zero n_dk, by
  // increasing topic.
  struct Document {
    std::string_view key;
    uint64_t tokens = 0;
    std::span<const uint32_t> topics;
    std::span<const uint32_t> counts;  // counts[i] = n_d,topics[i] > 0
  };
  // A document's weight in a topic (TopDocuments).
  struct Ranked {
    uint32_t document = 0;  // index for At()
    double weight = 0;      // θ_dk
  };

  // Reads every keyed document of `store`'s current version; `sweep` and
  // `view` name the model the store's topics belong to. Fails with the
  // store's error.
  static absl::StatusOr<std::shared_ptr<const DocumentTopics>> Collect(
      TokenStore* store, uint64_t sweep, uint64_t view);

  DocumentTopics() = default;
  DocumentTopics(const DocumentTopics&) = delete;  // the index points in
  DocumentTopics& operator=(const DocumentTopics&) = delete;

  // The document with this key, if the store had one.
  std::optional<Document> Find(std::string_view key) const;
  // The i-th document (i < size()).
  Document At(uint32_t i) const;
  size_t size() const { return keys_.size(); }
  // The `top` documents with the highest θ_dk for `topic` (α: the model's
  // K values), best first; ties by more tokens of the topic, then by key.
  std::vector<Ranked> TopDocuments(uint32_t topic, size_t top,
                                   std::span<const double> alpha) const;

  uint64_t sweep() const { return sweep_; }
  uint64_t view() const { return view_; }

 private:
  uint64_t sweep_ = 0;
  uint64_t view_ = 0;
  std::vector<std::string> keys_;
  std::vector<uint64_t> tokens_;
  std::vector<uint64_t> offsets_{0};  // document i: [offsets_[i], [i+1])
  std::vector<uint32_t> topics_;
  std::vector<uint32_t> counts_;
  // key -> index into keys_ (views into keys_, which no longer change).
  absl::flat_hash_map<std::string_view, uint32_t> index_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_DOCUMENT_TOPICS_H_
