// Rng: a small, fast, copyable pseudo-random generator (xoshiro256**,
// seeded through splitmix64) whose every output, including Uniform,
// UniformInt, Normal and Gamma, is computed here and so does not depend on
// the standard library: a seed gives the same stream on every platform
// (Normal and Gamma use std::log/sqrt/exp, correctly rounded in practice).
//
// Usage:
//   Rng rng = Rng::ForStream(seed, sweep, batch.index);  // per-batch stream
//   TopicId k = rng.UniformInt(num_topics);
//
// Thread-safety: a plain value; give each thread (or batch) its own copy.
#ifndef LATENTD_BASE_RANDOM_H_
#define LATENTD_BASE_RANDOM_H_

#include <cstdint>

namespace latentd {

// splitmix64 finaliser: a bijective 64-bit mix, used to derive seeds.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  // Any seed, 0 included, gives a full-period stream.
  explicit Rng(uint64_t seed = 0) {
    uint64_t x = seed;
    for (uint64_t& s : s_) {
      x += 0x9e3779b97f4a7c15ULL;
      s = Mix64(x);
    }
  }

  // An independent-looking stream for (seed, a, b), e.g. (seed, sweep,
  // batch index): the three are hashed together into one seed.
  static Rng ForStream(uint64_t seed, uint64_t stream_a, uint64_t stream_b) {
    return Rng(Mix64(Mix64(Mix64(seed) ^ stream_a) ^
                     (stream_b * 0x2545F4914F6CDD1DULL + 1)));
  }

  uint64_t NextU64() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  uint32_t NextU32() { return static_cast<uint32_t>(NextU64() >> 32); }

  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe under log().
  double UniformOpenZero() {
    return static_cast<double>((NextU64() >> 11) + 1) * 0x1.0p-53;
  }

  // Unbiased uniform integer in [0, n) (Lemire's multiply-and-reject).
  // REQUIRES: n > 0.
  uint64_t UniformInt(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(NextU64()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(NextU64()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Standard normal (Marsaglia polar method).
  double Normal();
  // Gamma(shape, 1) (Marsaglia-Tsang; shape < 1 by the U^(1/shape) boost).
  // REQUIRES: shape > 0. May return 0 for very small shapes (underflow);
  // LogGamma does not.
  double Gamma(double shape);
  // log of a Gamma(shape, 1) draw, accurate for tiny shapes (a Dirichlet
  // with parameters like 0.01 is sampled in log space). REQUIRES: shape > 0.
  double LogGamma(double shape);
  // Poisson(mean) (inversion for small means, PTRS for large).
  // REQUIRES: 0 <= mean <= 1e12.
  uint64_t Poisson(double mean);

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace latentd

#endif  // LATENTD_BASE_RANDOM_H_
