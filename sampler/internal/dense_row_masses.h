// DenseRowMasses: SparseLDA's word bucket over a dense word row (counts[k]
// is topic k's, TopicTable::RawRow::counts), the walk that dominates a sweep
// while rows are dense (the first sweeps of a large corpus: 40% of a sweep
// over 200 M tokens at K=100). For k < size it writes
//   mass[k] = max(c_k - [k == excluded], 0) · coef[k]
// and returns the row's total count Σ c_k. The caller takes the running
// sum (RunningSum, row_masses.h).
//
// Unlike the sparse walk (row_masses.h) nothing is gathered or compressed:
// counts and coefficients are both indexed by topic, so each step is a
// load, a conversion and a multiply. Three implementations:
// AVX-512 (eight topics a step), AVX2 (four), scalar. All write the same
// masses bit for bit (one multiply each). The vector ones fix the excluded
// topic's mass after the loop from a second read of its slot: while the
// writer runs that read may see a newer count than the walk did, which is
// as valid a value (the table's readers see each slot before or after an
// update, never torn).
//
// Which one DenseRowMasses uses (kDenseRowMassesPath) is chosen once, at
// startup: AVX-512 where the CPU has AVX-512F/VL, else AVX2 where it has
// AVX2, else scalar. LATENTD_CPU caps it as it caps the sparse walk:
// "avx2" (AVX2 where the CPU has it), "scalar"; "avx512" or unset: the
// best the CPU has; any other value: scalar (row_masses.h reports it).
//
// Thread-safety: pure functions of their arguments; the row may be written
// by the table's writer meanwhile (each 4-byte count is read whole).
#ifndef LATENTD_SAMPLER_INTERNAL_DENSE_ROW_MASSES_H_
#define LATENTD_SAMPLER_INTERNAL_DENSE_ROW_MASSES_H_

#include <atomic>
#include <cstdint>

#include "corpora/types.h"
#include "sampler/topic_table.h"

namespace latentd::internal {

using DenseRowMassesFn = int64_t (*)(const std::atomic<Count>* counts,
                                     uint32_t size, const double* coef,
                                     TopicId excluded, double* mass);

// The reference: one slot at a time.
inline int64_t DenseRowMassesScalar(const std::atomic<Count>* counts,
                                    uint32_t size, const double* coef,
                                    TopicId excluded, double* mass) {
  int64_t tokens = 0;
  for (uint32_t k = 0; k < size; ++k) {
    const Count c = counts[k].load(std::memory_order_relaxed);
    tokens += c;
    const Count x = c - (k == excluded);
    mass[k] = (x > 0 ? x : 0) * coef[k];
  }
  return tokens;
}

// The vector implementations, for tests and benchmarks; null where the CPU
// (or the compiler) lacks the instructions.
extern const DenseRowMassesFn DenseRowMassesAvx512;
extern const DenseRowMassesFn DenseRowMassesAvx2;

struct DenseRowMassesPath {
  DenseRowMassesFn fn;  // never null
  const char* name;     // "avx512", "avx2" or "scalar"
};
// The path for a LATENTD_CPU value `cap` (null: unset) on this CPU.
DenseRowMassesPath ChooseDenseRowMassesPath(const char* cap);
// ChooseDenseRowMassesPath(getenv("LATENTD_CPU")), set during static
// initialization (before it, fn reads as null, which DenseRowMasses takes
// as scalar).
extern const DenseRowMassesPath kDenseRowMassesPath;

inline int64_t DenseRowMasses(const std::atomic<Count>* counts, uint32_t size,
                              const double* coef, TopicId excluded,
                              double* mass) {
  if (kDenseRowMassesPath.fn != nullptr) {
    return kDenseRowMassesPath.fn(counts, size, coef, excluded, mass);
  }
  return DenseRowMassesScalar(counts, size, coef, excluded, mass);
}

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_DENSE_ROW_MASSES_H_
