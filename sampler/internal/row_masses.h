// RowMasses: the row walk that builds SparseLDA's word bucket, the hottest
// loop of the samplers (a quarter of a news20 sweep's CPU at K=1000). For
// each slot of a word row (packed count << 16 | topic, TopicTable::RawRow)
// whose count c is positive, in slot order, it writes the slot's topic and
// count and the running sum of the masses max(c - [topic == excluded], 0) ·
// coef[topic] of the slots so far (zero-count slots add nothing and are
// dropped). The kernels draw from that running sum by UpperBound.
//
// Three implementations. AVX-512 (eight slots a step: one gather of the
// coefficients, the masses of the slots kept compressed into place, then
// their running sum four at a time, RunningSum) where the CPU has
// AVX-512F/VL. AVX2 (eight slots a step: the kept lanes packed by a
// permutation from a 256-entry table, two 4-lane gathers, the running sums
// in registers in RunningSum's order) where it has AVX2. A scalar one.
// All write the same slots, topics, counts and token sum, and ascending
// running sums in which a slot of mass 0 adds exactly nothing; the sums add
// the same masses in a different order, so they can differ in the last
// bits. A sweep is reproducible on one machine and path, not bit for bit
// across paths.
//
// Which one RowMasses uses (kRowMassesPath) is chosen once, at startup:
// AVX-512 where the CPU has it, else scalar; AVX2 only where
// kRowMassesAvx2ByDefault says so. The environment variable LATENTD_CPU
// overrides it: "avx2" (the AVX2 walk, where the CPU has AVX2, else
// scalar), "scalar", "avx512" or unset (the default); any other value is
// reported on stderr and means scalar. docs/benchmarks.md ("Row walk") has
// each path's speed, alone and in a sweep.
//
// Thread-safety: pure functions of their arguments. The row may be written
// by the table's writer meanwhile: each 4-byte slot is read whole (an
// aligned lane of a vector load is one access on x86-64), so every slot
// read is a value the writer stored, as with TopicTable::ForEachSlot.
#ifndef LATENTD_SAMPLER_INTERNAL_ROW_MASSES_H_
#define LATENTD_SAMPLER_INTERNAL_ROW_MASSES_H_

#include <atomic>
#include <cstdint>

#include "corpora/types.h"
#include "sampler/topic_table.h"

namespace latentd::internal {

// Where a walk writes its slots. counts may be null (not written).
// REQUIRES: each array has room for size + kRowMassesSlack elements (the
// vector stores write whole steps past the last slot kept).
struct RowMassesOut {
  TopicId* topics;
  double* running;
  Count* counts;
};
inline constexpr uint32_t kRowMassesSlack = 8;

// A topic id no slot has: excludes nothing.
inline constexpr TopicId kNoExcludedTopic = ~TopicId{0};

// Replaces m[0, n) by its running sum and returns the total, four slots at
// a time: the sum carried from block to block is the only dependency chain,
// one add per four slots instead of one per slot. Ascending for masses
// >= 0, and a slot of mass 0 gets exactly the sum before it.
inline double RunningSum(double* m, uint32_t n) {
  double q = 0;
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const double s01 = m[i] + m[i + 1];
    const double s23 = m[i + 2] + m[i + 3];
    m[i] = q + m[i];
    m[i + 1] = q + s01;
    m[i + 2] = q + (s01 + m[i + 2]);
    q += s01 + s23;
    m[i + 3] = q;
  }
  for (; i < n; ++i) m[i] = (q += m[i]);
  return q;
}

// The implementations, for tests and benchmarks, whatever LATENTD_CPU says.
// RowMassesAvx512 is null where the CPU (or the compiler) lacks AVX-512F/VL,
// RowMassesAvx2 where it lacks AVX2.
using RowMassesFn = uint32_t (*)(const std::atomic<uint32_t>* entries,
                                 uint32_t size, const double* coef,
                                 TopicId excluded, const RowMassesOut& out,
                                 int64_t* tokens);
extern const RowMassesFn RowMassesAvx512;
extern const RowMassesFn RowMassesAvx2;

// Walks entries[0, size); returns the slots kept (n) and sets *tokens to
// the row's total count. REQUIRES: size <= kMaxTopics. The q mass is
// out.running[n - 1] (0 if n == 0).
inline uint32_t RowMassesScalar(const std::atomic<uint32_t>* entries,
                                uint32_t size, const double* coef,
                                TopicId excluded, const RowMassesOut& out,
                                int64_t* tokens) {
  // Branch-free: every slot is written, and the output advances past it
  // only if its count is positive.
  int64_t sum = 0;
  double q = 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < size; ++i) {
    const uint32_t e = entries[i].load(std::memory_order_relaxed);
    const TopicId k = TopicTable::RawTopic(e);
    const Count c = TopicTable::RawCount(e);
    sum += c;
    const Count x = c - (k == excluded);
    q += (x > 0 ? x : 0) * coef[k];
    out.topics[n] = k;
    out.running[n] = q;
    if (out.counts != nullptr) out.counts[n] = c;
    n += (c > 0);
  }
  *tokens = sum;
  return n;
}

// The vector walk RowMasses uses, and the shortest row it is used for (on
// shorter rows its longer chain of latencies per step costs more than the
// scalar loop): AVX-512 from kRowMassesVectorSlots, AVX2 from
// kRowMassesAvx2Slots (row_masses_benchmark, BM_RowMassesBySize). name:
// "avx512", "avx2" or "scalar" (fn null, min_slots never reached).
struct RowMassesPath {
  RowMassesFn fn;
  uint32_t min_slots;
  const char* name;
};
inline constexpr uint32_t kRowMassesVectorSlots = 16;
inline constexpr uint32_t kRowMassesAvx2Slots = 16;

// Whether a CPU with AVX2 and no AVX-512 walks rows with AVX2 by default.
// No: alone, on rows as at a uniform start, the AVX2 walk is 1.1-1.25x the
// scalar one, but in a news20 sweep (K=1000, one thread; rows of 33 topics
// on average by then) it took 5-10% more cycles than the scalar loop
// inlined in the kernel, at any threshold up to 48 slots, and tokens per
// CPU second were the same (measured on an AMD EPYC with AVX-512, forcing
// AVX2; docs/benchmarks.md). Measure again on a CPU
// without AVX-512 (ops/bench/cpu_paths.sh) before turning it on.
inline constexpr bool kRowMassesAvx2ByDefault = false;

// The path for a LATENTD_CPU value `cap` (null: unset) on this CPU, as the
// banner says; an unknown value is reported on stderr and gives the
// scalar path.
RowMassesPath ChooseRowMassesPath(const char* cap);

// ChooseRowMassesPath(getenv("LATENTD_CPU")), set during static
// initialization (before it, e.g. from another file's static initializer,
// it reads as all zero, which RowMasses takes as scalar).
extern const RowMassesPath kRowMassesPath;

// The walk for a row of `size` slots: kRowMassesPath's vector walk for rows
// of at least its min_slots, else the scalar one.
inline uint32_t RowMasses(const std::atomic<uint32_t>* entries, uint32_t size,
                          const double* coef, TopicId excluded,
                          const RowMassesOut& out, int64_t* tokens) {
  if (size >= kRowMassesPath.min_slots && kRowMassesPath.fn != nullptr) {
    return kRowMassesPath.fn(entries, size, coef, excluded, out, tokens);
  }
  return RowMassesScalar(entries, size, coef, excluded, out, tokens);
}

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_ROW_MASSES_H_
