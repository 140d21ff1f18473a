// The word-topic counts a token store's assignments make, as deltas a
// TopicTable applies: what a node's own documents add to (or, negated,
// take from) a model.
//
// Thread-safety: reads the store only; the store must not be rewritten
// meanwhile.
#ifndef LATENTD_SAMPLER_STORE_COUNTS_H_
#define LATENTD_SAMPLER_STORE_COUNTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "sampler/topic_table.h"

namespace latentd {

// One delta per (word, topic) the store's tokens use, sorted by word then
// topic (what TopicTable::Apply takes), each the token count times `sign`
// (+1 or -1). *documents, if given, gets the number of documents read.
// Fails with the store's error if it cannot be read.
absl::StatusOr<std::vector<WordTopicDelta>> StoreCounts(
    TokenStore* store, int sign, uint64_t* documents = nullptr);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_STORE_COUNTS_H_
