#include "sampler/internal/row_search.h"

#include <cstdlib>

#include "base/cpu_features.h"

namespace latentd::internal {
namespace {

#if defined(__x86_64__)
// The lanes of a 16-slot step that lie inside the array, `left` slots
// from its end.
inline __mmask16 TailMask16(uint32_t left) {
  return left >= 16 ? __mmask16{0xffff}
                    : static_cast<__mmask16>((1u << left) - 1);
}

__attribute__((target("avx512f,avx512vl"))) int32_t FindSlotAvx512Impl(
    const std::atomic<uint32_t>* entries, uint32_t size, TopicId topic) {
  const auto* p = reinterpret_cast<const uint32_t*>(entries);
  const __m512i wanted = _mm512_set1_epi32(static_cast<int>(topic));
  const __m512i topic_bits = _mm512_set1_epi32(0xffff);
  // An entry with a positive count is at least 1 << 16.
  const __m512i counted = _mm512_set1_epi32(1 << 16);
  for (uint32_t i = 0; i < size; i += 16) {
    const __mmask16 valid = TailMask16(size - i);
    const __m512i e = _mm512_maskz_loadu_epi32(valid, p + i);
    const __mmask16 hit = _mm512_mask_cmpge_epu32_mask(
        _mm512_cmpeq_epi32_mask(_mm512_and_si512(e, topic_bits), wanted), e,
        counted);
    if (hit != 0) return static_cast<int32_t>(i + __builtin_ctz(hit));
  }
  return -1;
}

__attribute__((target("avx512f,avx512vl"))) uint32_t NextHoleAvx512Impl(
    const std::atomic<uint32_t>* entries, uint32_t size, uint32_t from) {
  const auto* p = reinterpret_cast<const uint32_t*>(entries);
  const __m512i counted = _mm512_set1_epi32(1 << 16);
  for (uint32_t i = from; i < size; i += 16) {
    const __mmask16 valid = TailMask16(size - i);
    const __m512i e = _mm512_maskz_loadu_epi32(valid, p + i);
    const __mmask16 hole = _mm512_mask_cmplt_epu32_mask(valid, e, counted);
    if (hole != 0) return i + static_cast<uint32_t>(__builtin_ctz(hole));
  }
  return size > from ? size : from;
}

__attribute__((target("avx512f,avx512vl"))) int32_t FindTopicAvx512Impl(
    const TopicId* topics, uint32_t size, TopicId topic) {
  const __m512i wanted = _mm512_set1_epi32(static_cast<int>(topic));
  for (uint32_t i = 0; i < size; i += 16) {
    const __mmask16 valid = TailMask16(size - i);
    const __mmask16 hit = _mm512_mask_cmpeq_epi32_mask(
        valid, _mm512_maskz_loadu_epi32(valid, topics + i), wanted);
    if (hit != 0) return static_cast<int32_t>(i + __builtin_ctz(hit));
  }
  return -1;
}

__attribute__((target("avx2"))) int32_t FindTopicAvx2Impl(const TopicId* topics,
                                                          uint32_t size,
                                                          TopicId topic) {
  const __m256i wanted = _mm256_set1_epi32(static_cast<int>(topic));
  uint32_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const __m256i t =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(topics + i));
    const uint32_t hit = static_cast<uint32_t>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(t, wanted))));
    if (hit != 0) return static_cast<int32_t>(i + __builtin_ctz(hit));
  }
  const int32_t tail = FindTopicScalar(topics + i, size - i, topic);
  return tail < 0 ? -1 : static_cast<int32_t>(i) + tail;
}

// A counted slot of `topic` has topic bits equal to it and is not equal to
// it (its count bits are not 0): AVX2 has no unsigned compare.
__attribute__((target("avx2"))) int32_t FindSlotAvx2Impl(
    const std::atomic<uint32_t>* entries, uint32_t size, TopicId topic) {
  const auto* p = reinterpret_cast<const uint32_t*>(entries);
  const __m256i wanted = _mm256_set1_epi32(static_cast<int>(topic));
  const __m256i topic_bits = _mm256_set1_epi32(0xffff);
  uint32_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const __m256i e =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const __m256i hit = _mm256_andnot_si256(
        _mm256_cmpeq_epi32(e, wanted),
        _mm256_cmpeq_epi32(_mm256_and_si256(e, topic_bits), wanted));
    const uint32_t mask =
        static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(hit)));
    if (mask != 0) return static_cast<int32_t>(i + __builtin_ctz(mask));
  }
  const int32_t tail = FindSlotScalar(entries + i, size - i, topic);
  return tail < 0 ? -1 : static_cast<int32_t>(i) + tail;
}

__attribute__((target("avx2"))) uint32_t NextHoleAvx2Impl(
    const std::atomic<uint32_t>* entries, uint32_t size, uint32_t from) {
  const auto* p = reinterpret_cast<const uint32_t*>(entries);
  const __m256i zero = _mm256_setzero_si256();
  uint32_t i = from;
  for (; i + 8 <= size; i += 8) {
    const __m256i e =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const uint32_t hole =
        static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(
            _mm256_cmpeq_epi32(_mm256_srli_epi32(e, 16), zero))));
    if (hole != 0) return i + static_cast<uint32_t>(__builtin_ctz(hole));
  }
  return NextHoleScalar(entries, size, i);
}

bool Avx512() { return CpuHasAvx512(); }
bool Avx2() { return CpuHasAvx2(); }
#else
bool Avx512() { return false; }
bool Avx2() { return false; }
#endif

CpuCap Cap() { return ParseCpuCap(std::getenv("LATENTD_CPU")); }

// AVX-512 where the CPU has it and LATENTD_CPU does not cap it, AVX2
// likewise, else `scalar` (null or the definition).
template <typename Fn>
Fn Choose(Fn avx512, Fn avx2, Fn scalar) {
  const CpuCap cap = Cap();
  if (cap == CpuCap::kAny && avx512 != nullptr) return avx512;
  if ((cap == CpuCap::kAny || cap == CpuCap::kAvx2) && avx2 != nullptr) {
    return avx2;
  }
  return scalar;
}

}  // namespace

#if defined(__x86_64__)
const FindSlotFn FindSlotAvx512 = Avx512() ? &FindSlotAvx512Impl : nullptr;
const FindSlotFn FindSlotAvx2 = Avx2() ? &FindSlotAvx2Impl : nullptr;
const NextHoleFn NextHoleAvx512 = Avx512() ? &NextHoleAvx512Impl : nullptr;
const NextHoleFn NextHoleAvx2 = Avx2() ? &NextHoleAvx2Impl : nullptr;
const FindTopicFn FindTopicAvx512 = Avx512() ? &FindTopicAvx512Impl : nullptr;
const FindTopicFn FindTopicAvx2 = Avx2() ? &FindTopicAvx2Impl : nullptr;
#else
const FindSlotFn FindSlotAvx512 = nullptr;
const FindSlotFn FindSlotAvx2 = nullptr;
const NextHoleFn NextHoleAvx512 = nullptr;
const NextHoleFn NextHoleAvx2 = nullptr;
const FindTopicFn FindTopicAvx512 = nullptr;
const FindTopicFn FindTopicAvx2 = nullptr;
#endif
const FindSlotFn kFindSlot =
    Choose<FindSlotFn>(FindSlotAvx512, FindSlotAvx2, nullptr);
const NextHoleFn kNextHole =
    Choose<NextHoleFn>(NextHoleAvx512, NextHoleAvx2, nullptr);
const FindTopicFn kFindTopic =
    Choose<FindTopicFn>(FindTopicAvx512, FindTopicAvx2, &FindTopicScalar);

}  // namespace latentd::internal
