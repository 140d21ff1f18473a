// The pipeline's combiner: folds a batch's topic changes into one net delta
// per (word, topic), ordered by word then topic (the order the count updater
// applies them in).
//
// Each change becomes two packed keys ((word, topic) and the sign) that an
// LSD radix sort over only their significant bits orders; equal (word,
// topic) pairs then sit side by side and are summed. At the batch sizes of a
// sweep (tens of thousands of changes) this is several times faster than a
// comparison sort.
//
// Thread-safety: a DeltaCombiner holds scratch; one thread at a time.
#ifndef LATENTD_SAMPLER_INTERNAL_DELTA_COMBINER_H_
#define LATENTD_SAMPLER_INTERNAL_DELTA_COMBINER_H_

#include <cstdint>
#include <vector>

#include "sampler/sampling_kernel.h"
#include "sampler/topic_table.h"

namespace latentd::internal {

class DeltaCombiner {
 public:
  // Replaces *deltas with the net, non-zero deltas of `changes`, sorted by
  // (word, topic). Changes whose old and new topic agree contribute nothing.
  void Combine(const std::vector<TopicChange>& changes,
               std::vector<WordTopicDelta>* deltas);

 private:
  std::vector<uint64_t> keys_, scratch_;
  std::vector<uint32_t> histogram_;
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_DELTA_COMBINER_H_
