#include "sampler/internal/row_masses.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "base/cpu_features.h"

namespace latentd::internal {
namespace {

#if defined(__x86_64__)
#define LATENTD_AVX512 __attribute__((target("avx512f,avx512vl")))

LATENTD_AVX512 uint32_t RowMassesAvx512Impl(
    const std::atomic<uint32_t>* entries, uint32_t size, const double* coef,
    TopicId excluded, const RowMassesOut& out, int64_t* tokens) {
  const __m256i excluded_v = _mm256_set1_epi32(static_cast<int>(excluded));
  const __m256i zero = _mm256_setzero_si256();
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i topic_bits = _mm256_set1_epi32(0xffff);
  // Counts are 16-bit: a lane sums at most 2^13 of them (kMaxTopics slots)
  // within 32 bits.
  __m256i token_sum = _mm256_setzero_si256();
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
    const __m256i e = _mm256_maskz_loadu_epi32(
        valid, reinterpret_cast<const uint32_t*>(entries) + i);
    const __m256i topic = _mm256_and_si256(e, topic_bits);
    const __m256i count = _mm256_srli_epi32(e, 16);
    token_sum = _mm256_add_epi32(token_sum, count);
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
  *tokens = _mm512_reduce_add_epi64(_mm512_cvtepu32_epi64(token_sum));
  RunningSum(running_out, n);
  return n;
}

// AVX2: eight slots a step, as two 4-slot loads. No compress instruction:
// the kept lanes are packed by a permutation looked up by the step's 8-bit
// keep mask (kPack, 2 KiB), applied to the topics, counts and masses'
// multipliers before the gathers, so the coefficients gathered are already
// in packed order and the masses need no permutation of their own. Their
// running sums are formed in registers, step by step: a RunningSum pass
// after the loop, reading back what its vector stores had just written,
// made the walk 0.88x scalar on rows from memory at K=100; in registers,
// 1.25x (row_masses_benchmark, BM_RowMassesCold).
struct PackTable {
  // entry[mask]: byte j = the lane of the j-th set bit of mask (the rest 0).
  uint64_t entry[256];
};
constexpr PackTable MakePackTable() {
  PackTable t{};
  for (uint32_t mask = 0; mask < 256; ++mask) {
    uint64_t e = 0;
    uint32_t j = 0;
    for (uint32_t lane = 0; lane < 8; ++lane) {
      if (mask & (1u << lane)) e |= uint64_t{lane} << (8 * j++);
    }
    t.entry[mask] = e;
  }
  return t;
}
alignas(64) constexpr PackTable kPack = MakePackTable();

#define LATENTD_AVX2 __attribute__((target("avx2")))

struct Avx2State {
  __m256i token_sum;
  __m256d q;  // the running sum so far, in every lane
  uint32_t n;
};

// The running sums of a block of masses [a, b, c, d] >= 0:
// [a, a + b, (a + b) + c, (a + b) + (c + d)], RunningSum's order, so they
// ascend and a mass of 0 adds exactly nothing.
LATENTD_AVX2 __attribute__((always_inline)) inline __m256d BlockSums(
    __m256d m) {
  // [a, a + b, c, c + d]
  const __m256d t =
      _mm256_add_pd(m, _mm256_unpacklo_pd(_mm256_setzero_pd(), m));
  // + [0, 0, a + b, a + b]
  const __m256d ab = _mm256_permute_pd(t, 0xf);
  return _mm256_add_pd(t, _mm256_permute2f128_pd(ab, ab, 0x08));
}

// One step of eight slots (lanes past the row hold 0, so count 0: neither
// counted nor kept). Writes the kept slots' topics, counts and running sums
// at out + n.
LATENTD_AVX2 __attribute__((always_inline)) inline void Avx2Step(
    __m256i e, const double* coef, __m256i excluded_v, TopicId* topics_out,
    double* running_out, Count* counts_out, Avx2State& s) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i topic = _mm256_and_si256(e, _mm256_set1_epi32(0xffff));
  const __m256i count = _mm256_srli_epi32(e, 16);
  // 16-bit counts: a lane sums at most 2^13 of them within 32 bits.
  s.token_sum = _mm256_add_epi32(s.token_sum, count);
  // count - 1 at the excluded topic (cmpeq is -1 there), at least 0.
  const __m256i x = _mm256_max_epi32(
      _mm256_add_epi32(count, _mm256_cmpeq_epi32(topic, excluded_v)), zero);
  const uint32_t keep = static_cast<uint32_t>(
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(count, zero))));
  const __m256i pack = _mm256_cvtepu8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&kPack.entry[keep])));
  // Packed lanes past the kept ones repeat lane 0: a topic of the row (or 0
  // past its end), so the gathers below read inside coef.
  const __m256i topic_p = _mm256_permutevar8x32_epi32(topic, pack);
  const int kept = __builtin_popcount(keep);
  // Packed lanes past the kept ones get multiplier 0 (mass 0), so they
  // add nothing to the sums below.
  const __m256i x_p = _mm256_and_si256(
      _mm256_permutevar8x32_epi32(x, pack),
      _mm256_cmpgt_epi32(_mm256_set1_epi32(kept),
                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(topics_out + s.n), topic_p);
  if (counts_out != nullptr) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(counts_out + s.n),
                        _mm256_permutevar8x32_epi32(count, pack));
  }
  const __m128i t_lo = _mm256_castsi256_si128(topic_p);
  const __m128i t_hi = _mm256_extracti128_si256(topic_p, 1);
  const __m256d m_lo =
      _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(x_p)),
                    _mm256_i32gather_pd(coef, t_lo, 8));
  const __m256d m_hi =
      _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(x_p, 1)),
                    _mm256_i32gather_pd(coef, t_hi, 8));
  // The running sums: each half's block sums, the low half's total added
  // to the high half's, then the sum so far to both (the only dependency
  // from step to step: one add).
  const __m256d r_lo = BlockSums(m_lo);
  const __m256d r_hi =
      _mm256_add_pd(BlockSums(m_hi), _mm256_permute4x64_pd(r_lo, 0xff));
  _mm256_storeu_pd(running_out + s.n, _mm256_add_pd(s.q, r_lo));
  _mm256_storeu_pd(running_out + s.n + 4, _mm256_add_pd(s.q, r_hi));
  s.q = _mm256_add_pd(s.q, _mm256_permute4x64_pd(r_hi, 0xff));
  s.n += static_cast<uint32_t>(kept);
}

LATENTD_AVX2 uint32_t RowMassesAvx2Impl(const std::atomic<uint32_t>* entries,
                                        uint32_t size, const double* coef,
                                        TopicId excluded,
                                        const RowMassesOut& out,
                                        int64_t* tokens) {
  const __m256i excluded_v = _mm256_set1_epi32(static_cast<int>(excluded));
  const auto* const e = reinterpret_cast<const __m256i*>(entries);
  TopicId* const topics_out = out.topics;
  double* const running_out = out.running;
  Count* const counts_out = out.counts;
  Avx2State s{_mm256_setzero_si256(), _mm256_setzero_pd(), 0};
  uint32_t i = 0;
  for (; i + 8 <= size; i += 8) {
    Avx2Step(_mm256_loadu_si256(e + i / 8), coef, excluded_v, topics_out,
             running_out, counts_out, s);
  }
  if (i < size) {
    // The last partial step: a masked load (lanes past the row read 0 and
    // touch no memory).
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i left = _mm256_set1_epi32(static_cast<int>(size - i));
    Avx2Step(_mm256_maskload_epi32(reinterpret_cast<const int*>(entries + i),
                                   _mm256_cmpgt_epi32(left, lane)),
             coef, excluded_v, topics_out, running_out, counts_out, s);
  }
  // The lanes' sums, widened to 64 bits and added.
  const __m256i wide = _mm256_add_epi64(
      _mm256_cvtepu32_epi64(_mm256_castsi256_si128(s.token_sum)),
      _mm256_cvtepu32_epi64(_mm256_extracti128_si256(s.token_sum, 1)));
  const __m128i t = _mm_add_epi64(_mm256_castsi256_si128(wide),
                                  _mm256_extracti128_si256(wide, 1));
  *tokens = _mm_cvtsi128_si64(_mm_add_epi64(t, _mm_unpackhi_epi64(t, t)));
  return s.n;
}

RowMassesFn ChooseAvx512() {
  return CpuHasAvx512() ? &RowMassesAvx512Impl : nullptr;
}
RowMassesFn ChooseAvx2() { return CpuHasAvx2() ? &RowMassesAvx2Impl : nullptr; }
#else
RowMassesFn ChooseAvx512() { return nullptr; }
RowMassesFn ChooseAvx2() { return nullptr; }
#endif

}  // namespace

const RowMassesFn RowMassesAvx512 = ChooseAvx512();
const RowMassesFn RowMassesAvx2 = ChooseAvx2();

RowMassesPath ChooseRowMassesPath(const char* cap) {
  const CpuCap c = ParseCpuCap(cap);
  if (c == CpuCap::kAny && RowMassesAvx512 != nullptr) {
    return {RowMassesAvx512, kRowMassesVectorSlots, "avx512"};
  }
  if (((c == CpuCap::kAny && kRowMassesAvx2ByDefault) || c == CpuCap::kAvx2) &&
      RowMassesAvx2 != nullptr) {
    return {RowMassesAvx2, kRowMassesAvx2Slots, "avx2"};
  }
  if (c == CpuCap::kUnknown) {
    std::fprintf(stderr,
                 "latentd: LATENTD_CPU=%s is not one of avx512, avx2, scalar; "
                 "using the scalar row walk\n",
                 cap);
  }
  return {nullptr, ~uint32_t{0}, "scalar"};
}

const RowMassesPath kRowMassesPath =
    ChooseRowMassesPath(std::getenv("LATENTD_CPU"));

}  // namespace latentd::internal
