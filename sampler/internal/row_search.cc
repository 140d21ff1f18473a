#include "sampler/internal/row_search.h"

#include <cstdlib>

#include "base/cpu_features.h"

namespace latentd::internal {
namespace {

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512vl"))) int32_t FindSlotAvx512Impl(
    const std::atomic<uint32_t>* entries, uint32_t size, TopicId topic) {
  const auto* p = reinterpret_cast<const uint32_t*>(entries);
  const __m512i wanted = _mm512_set1_epi32(static_cast<int>(topic));
  const __m512i topic_bits = _mm512_set1_epi32(0xffff);
  // An entry with a positive count is at least 1 << 16.
  const __m512i counted = _mm512_set1_epi32(1 << 16);
  for (uint32_t i = 0; i < size; i += 16) {
    const __mmask16 valid =
        size - i >= 16 ? __mmask16{0xffff}
                       : static_cast<__mmask16>((1u << (size - i)) - 1);
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
    const __mmask16 valid =
        size - i >= 16 ? __mmask16{0xffff}
                       : static_cast<__mmask16>((1u << (size - i)) - 1);
    const __m512i e = _mm512_maskz_loadu_epi32(valid, p + i);
    const __mmask16 hole = _mm512_mask_cmplt_epu32_mask(valid, e, counted);
    if (hole != 0) return i + static_cast<uint32_t>(__builtin_ctz(hole));
  }
  return size > from ? size : from;
}

bool Avx512() { return CpuHasAvx512(); }
#else
bool Avx512() { return false; }
#endif

bool Uncapped() {
  return ParseCpuCap(std::getenv("LATENTD_CPU")) == CpuCap::kAny;
}

}  // namespace

#if defined(__x86_64__)
const FindSlotFn FindSlotAvx512 = Avx512() ? &FindSlotAvx512Impl : nullptr;
const NextHoleFn NextHoleAvx512 = Avx512() ? &NextHoleAvx512Impl : nullptr;
#else
const FindSlotFn FindSlotAvx512 = nullptr;
const NextHoleFn NextHoleAvx512 = nullptr;
#endif
const FindSlotFn kFindSlot = Uncapped() ? FindSlotAvx512 : nullptr;
const NextHoleFn kNextHole = Uncapped() ? NextHoleAvx512 : nullptr;

}  // namespace latentd::internal
