#include "sampler/internal/dense_row_masses.h"

#include <cstdlib>

#include "base/cpu_features.h"

namespace latentd::internal {
namespace {

// The excluded topic's mass, from its count read again (after a vector
// loop that wrote it unexcluded).
inline void ExcludeTopic(const std::atomic<Count>* counts, uint32_t size,
                         const double* coef, TopicId excluded, double* mass) {
  if (excluded >= size) return;
  const Count c = counts[excluded].load(std::memory_order_relaxed);
  mass[excluded] = (c > 1 ? c - 1 : 0) * coef[excluded];
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512vl"))) int64_t DenseRowMassesAvx512Impl(
    const std::atomic<Count>* counts, uint32_t size, const double* coef,
    TopicId excluded, double* mass) {
  const auto* c32 = reinterpret_cast<const int32_t*>(counts);
  __m512i token_sum = _mm512_setzero_si512();
  for (uint32_t k = 0; k < size; k += 8) {
    const __mmask8 valid = size - k >= 8
                               ? __mmask8{0xff}
                               : static_cast<__mmask8>((1u << (size - k)) - 1);
    const __m256i count = _mm256_maskz_loadu_epi32(valid, c32 + k);
    token_sum = _mm512_add_epi64(token_sum, _mm512_cvtepi32_epi64(count));
    const __m512d m = _mm512_mul_pd(_mm512_cvtepi32_pd(count),
                                    _mm512_maskz_loadu_pd(valid, coef + k));
    _mm512_mask_storeu_pd(mass + k, valid, m);
  }
  ExcludeTopic(counts, size, coef, excluded, mass);
  return _mm512_reduce_add_epi64(token_sum);
}

__attribute__((target("avx2"))) int64_t DenseRowMassesAvx2Impl(
    const std::atomic<Count>* counts, uint32_t size, const double* coef,
    TopicId excluded, double* mass) {
  const auto* c32 = reinterpret_cast<const int32_t*>(counts);
  __m256i token_sum = _mm256_setzero_si256();
  uint32_t k = 0;
  for (; k + 4 <= size; k += 4) {
    const __m128i count =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(c32 + k));
    token_sum = _mm256_add_epi64(token_sum, _mm256_cvtepi32_epi64(count));
    _mm256_storeu_pd(mass + k, _mm256_mul_pd(_mm256_cvtepi32_pd(count),
                                             _mm256_loadu_pd(coef + k)));
  }
  const __m128i t = _mm_add_epi64(_mm256_castsi256_si128(token_sum),
                                  _mm256_extracti128_si256(token_sum, 1));
  int64_t tokens =
      _mm_cvtsi128_si64(_mm_add_epi64(t, _mm_unpackhi_epi64(t, t)));
  // The last 0-3 topics (the excluded one is fixed after).
  tokens += DenseRowMassesScalar(counts + k, size - k, coef + k, ~TopicId{0},
                                 mass + k);
  ExcludeTopic(counts, size, coef, excluded, mass);
  return tokens;
}

DenseRowMassesFn ChooseDenseAvx512() {
  return CpuHasAvx512() ? &DenseRowMassesAvx512Impl : nullptr;
}
DenseRowMassesFn ChooseDenseAvx2() {
  return CpuHasAvx2() ? &DenseRowMassesAvx2Impl : nullptr;
}
#else
DenseRowMassesFn ChooseDenseAvx512() { return nullptr; }
DenseRowMassesFn ChooseDenseAvx2() { return nullptr; }
#endif

}  // namespace

const DenseRowMassesFn DenseRowMassesAvx512 = ChooseDenseAvx512();
const DenseRowMassesFn DenseRowMassesAvx2 = ChooseDenseAvx2();

DenseRowMassesPath ChooseDenseRowMassesPath(const char* cap) {
  const CpuCap c = ParseCpuCap(cap);
  if (c == CpuCap::kAny && DenseRowMassesAvx512 != nullptr) {
    return {DenseRowMassesAvx512, "avx512"};
  }
  if ((c == CpuCap::kAny || c == CpuCap::kAvx2) &&
      DenseRowMassesAvx2 != nullptr) {
    return {DenseRowMassesAvx2, "avx2"};
  }
  return {&DenseRowMassesScalar, "scalar"};
}

const DenseRowMassesPath kDenseRowMassesPath =
    ChooseDenseRowMassesPath(std::getenv("LATENTD_CPU"));

}  // namespace latentd::internal
