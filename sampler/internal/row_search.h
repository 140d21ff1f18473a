// Finding a topic's slot in a sparse word row (TopicTable's packed 32-bit
// entries, count << 16 | topic) by comparing 16 slots a step. The count
// updater's groups are a few deltas each; at large K their rows hold
// thousands of slots, and searching such a row for a few topics costs less
// than mapping all of it (TopicTable::MapRow reads every slot and stores
// the slot of each of its topics).
//
// kFindSlot is the AVX-512 search where the CPU has AVX-512F/VL and
// LATENTD_CPU does not cap the vector paths below it (row_masses.h), else
// null: the table then maps every row, as it did before this search.
// NextHole, the next zero-count slot where a new topic goes, likewise
// steps 16 slots at a time there, one elsewhere.
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
// the AVX-512 one whatever LATENTD_CPU says (for tests and benchmarks).
extern const FindSlotFn kFindSlot;
extern const FindSlotFn FindSlotAvx512;

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

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_ROW_SEARCH_H_
