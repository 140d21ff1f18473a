#include "sampler/store_counts.h"

#include "base/status_macros.h"
#include "sampler/internal/delta_combiner.h"

namespace latentd {

absl::StatusOr<std::vector<WordTopicDelta>> StoreCounts(TokenStore* store,
                                                        int sign,
                                                        uint64_t* documents) {
  // Every token as a change from nothing, summed per (word, topic) by the
  // pipeline's combiner (radix sort).
  std::vector<TopicChange> tokens;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, store->Read());
  DocBatch batch;
  uint64_t docs = 0;
  for (;;) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&batch));
    if (!more) break;
    for (size_t i = 0; i < batch.num_tokens(); ++i) {
      tokens.push_back({batch.words[i], kUncounted, batch.topics[i]});
    }
    docs += batch.num_docs();
  }
  std::vector<WordTopicDelta> out;
  internal::DeltaCombiner().Combine(tokens, &out);
  if (sign != 1) {
    for (WordTopicDelta& d : out) d.delta *= sign;
  }
  if (documents != nullptr) *documents = docs;
  return out;
}

}  // namespace latentd
