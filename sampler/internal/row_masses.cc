#include "sampler/internal/row_masses.h"

#include <atomic>

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start some results from _mm*_undefined_*(),
// which its -Wuninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

namespace latentd::internal {
namespace {

#if defined(__x86_64__)
#define LATENTD_AVX512 __attribute__((target("avx512f,avx512vl")))

LATENTD_AVX512 uint32_t RowMassesAvx512Impl(
    const std::atomic<uint64_t>* entries, uint32_t size, const double* coef,
    TopicId excluded, const RowMassesOut& out, int64_t* tokens) {
  const __m256i excluded_v = _mm256_set1_epi32(static_cast<int>(excluded));
  const __m256i zero = _mm256_setzero_si256();
  const __m256i one = _mm256_set1_epi32(1);
  __m512i token_sum = _mm512_setzero_si512();
  // Locals: the stores below could alias `out`, which would reload it.
  TopicId* const topics_out = out.topics;
  double* const running_out = out.running;
  Count* const counts_out = out.counts;
  uint32_t n = 0;
  for (uint32_t i = 0; i < size; i += 8) {
    const __mmask8 valid = size - i >= 8
                               ? __mmask8{0xff}
                               : static_cast<__mmask8>((1u << (size - i)) - 1);
    // Lanes past the row read as 0: count 0, so neither counted nor kept.
    const __m512i e = _mm512_maskz_loadu_epi64(
        valid, reinterpret_cast<const uint64_t*>(entries) + i);
    const __m256i topic = _mm512_cvtepi64_epi32(e);
    const __m256i count = _mm512_cvtepi64_epi32(_mm512_srli_epi64(e, 32));
    token_sum = _mm512_add_epi64(token_sum, _mm512_cvtepi32_epi64(count));
    const __mmask8 is_excluded = _mm256_cmpeq_epi32_mask(topic, excluded_v);
    const __m256i x = _mm256_max_epi32(
        _mm256_mask_sub_epi32(count, is_excluded, count, one), zero);
    const __m512d c =
        _mm512_mask_i32gather_pd(_mm512_setzero_pd(), valid, topic, coef, 8);
    const __m512d m = _mm512_mul_pd(_mm512_cvtepi32_pd(x), c);
    const __mmask8 keep = _mm256_cmpgt_epi32_mask(count, zero);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(topics_out + n),
                        _mm256_maskz_compress_epi32(keep, topic));
    if (counts_out != nullptr) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(counts_out + n),
                          _mm256_maskz_compress_epi32(keep, count));
    }
    _mm512_storeu_pd(running_out + n, _mm512_maskz_compress_pd(keep, m));
    n += static_cast<uint32_t>(__builtin_popcount(keep));
  }
  *tokens = _mm512_reduce_add_epi64(token_sum);
  RunningSum(running_out, n);
  return n;
}

RowMassesFn ChooseAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
             ? &RowMassesAvx512Impl
             : nullptr;
}
#else
RowMassesFn ChooseAvx512() { return nullptr; }
#endif

}  // namespace

const RowMassesFn RowMassesAvx512 = ChooseAvx512();

}  // namespace latentd::internal
