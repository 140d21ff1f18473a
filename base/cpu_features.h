// What the CPU this process runs on can execute, for the kernels that
// choose an implementation at startup (sampler/internal/row_masses.h,
// dense_row_masses.h), and on x86-64 the intrinsics (<immintrin.h>) they
// are written with. Always false off x86-64.
//
// Thread-safety: pure functions; safe from static initializers.
#ifndef LATENTD_BASE_CPU_FEATURES_H_
#define LATENTD_BASE_CPU_FEATURES_H_

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

#include <string_view>

namespace latentd {

// AVX-512 Foundation with the 256- and 128-bit forms (VL).
inline bool CpuHasAvx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

inline bool CpuHasAvx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// A LATENTD_CPU value (null: unset), which caps the vector paths the
// kernels choose: unset, "" or "avx512" lets each take its best (kAny),
// "avx2" and "scalar" cap it there, anything else is kUnknown (the caller
// says so and takes the scalar path).
enum class CpuCap { kAny, kAvx2, kScalar, kUnknown };
inline CpuCap ParseCpuCap(const char* value) {
  const std::string_view v = value == nullptr ? "" : value;
  if (v.empty() || v == "avx512") return CpuCap::kAny;
  if (v == "avx2") return CpuCap::kAvx2;
  if (v == "scalar") return CpuCap::kScalar;
  return CpuCap::kUnknown;
}

// LATENTD_CPU as the binaries' --help describes it.
inline constexpr char kCpuCapHelp[] =
    "LATENTD_CPU=avx2 or scalar caps the sampler's vector code (default: "
    "the best the CPU has, avx512, avx2 or scalar)";

}  // namespace latentd

#endif  // LATENTD_BASE_CPU_FEATURES_H_
