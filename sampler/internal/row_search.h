// Finding a topic's slot in a sparse word row (TopicTable's packed 32-bit
// entries, count << 16 | topic) by comparing 16 slots a step. The count
// updater's groups are a few deltas each; at large K their rows hold
// thousands of slots, and searching such a row for a few topics costs less
// than mapping all of it (TopicTable::MapRow reads every slot and stores
// the slot of each of its topics).
//
// kFindSlot is the AVX-512 search (16 slots a step) where the CPU has
// AVX-512F/VL and LATENTD_CPU does not cap the vector paths below it
// (row_masses.h), else the AVX2 one (8 a step) where it has AVX2 and
// LATENTD_CPU allows it, else null: the table then maps every row.
// NextHole, the next zero-count slot where a new topic goes, likewise
// steps 16 or 8 slots at a time, one where neither is allowed.
//
// FindTopic searches a plain array of topics (a kernel's walked row,
// SparseLdaKernel's q_topics_) 16 at a time with AVX-512, 8 with AVX2, one
// otherwise, as LATENTD_CPU allows: the sampler looks up the slots of the
// few topics a repeated word's token changed there, instead of mapping
// every slot of the row.
//
// Thread-safety: pure functions of their arguments.
#ifndef LATENTD_SAMPLER_INTERNAL_ROW_SEARCH_H_
#define LATENTD_SAMPLER_INTERNAL_ROW_SEARCH_H_

#include <atomic>
#include <cstdint>

#include "corpora/types.h"

namespace latentd::internal {

// The first slot of entries[0, size) with topic `topic` and a positive
// count, or -1.
using FindSlotFn = int32_t (*)(const std::atomic<uint32_t>* entries,
                               uint32_t size, TopicId topic);

// The search on this CPU (null: none faster than mapping the row), and
// each vector one whatever LATENTD_CPU says (null where the CPU lacks it;
// for tests and benchmarks).
extern const FindSlotFn kFindSlot;
extern const FindSlotFn FindSlotAvx512;
extern const FindSlotFn FindSlotAvx2;

// The definition, one slot at a time.
inline int32_t FindSlotScalar(const std::atomic<uint32_t>* entries,
                              uint32_t size, TopicId topic) {
  for (uint32_t i = 0; i < size; ++i) {
    const uint32_t e = entries[i].load(std::memory_order_relaxed);
    if ((e & 0xffffu) == topic && (e >> 16) > 0) {
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

// The first slot of entries[from, size) with count 0 (a hole), or size.
using NextHoleFn = uint32_t (*)(const std::atomic<uint32_t>* entries,
                                uint32_t size, uint32_t from);
extern const NextHoleFn kNextHole;  // null: NextHoleScalar
extern const NextHoleFn NextHoleAvx512;
extern const NextHoleFn NextHoleAvx2;

inline uint32_t NextHoleScalar(const std::atomic<uint32_t>* entries,
                               uint32_t size, uint32_t from) {
  while (from < size &&
         (entries[from].load(std::memory_order_relaxed) >> 16) != 0) {
    ++from;
  }
  return from;
}

inline uint32_t NextHole(const std::atomic<uint32_t>* entries, uint32_t size,
                         uint32_t from) {
  return kNextHole != nullptr ? kNextHole(entries, size, from)
                              : NextHoleScalar(entries, size, from);
}

// The first i in [0, size) with topics[i] == topic, or -1.
using FindTopicFn = int32_t (*)(const TopicId* topics, uint32_t size,
                                TopicId topic);

// The fastest search this CPU and LATENTD_CPU allow (never null), and
// each vector one whatever LATENTD_CPU says (null where the CPU lacks it).
extern const FindTopicFn kFindTopic;
extern const FindTopicFn FindTopicAvx512;
extern const FindTopicFn FindTopicAvx2;

inline int32_t FindTopicScalar(const TopicId* topics, uint32_t size,
                               TopicId topic) {
  for (uint32_t i = 0; i < size; ++i) {
    if (topics[i] == topic) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_ROW_SEARCH_H_
