#include "base/random.h"

#include <cmath>

#include "base/log_gamma.h"

namespace latentd {

double Rng::Normal() {
  double u, v, s;
  do {
    u = 2.0 * Uniform() - 1.0;
    v = 2.0 * Uniform() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  // The second variate (v * factor) is dropped to keep Rng a plain state.
  return u * std::sqrt(-2.0 * std::log(s) / s);
}

double Rng::LogGamma(double shape) {
  if (shape < 1.0) {
    // Gamma(a) = Gamma(a + 1) * U^(1/a).
    return LogGamma(shape + 1.0) + std::log(UniformOpenZero()) / shape;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = Normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = UniformOpenZero();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return std::log(d * v);
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) {
      return std::log(d * v);
    }
  }
}

double Rng::Gamma(double shape) { return std::exp(LogGamma(shape)); }

uint64_t Rng::Poisson(double mean) {
  if (mean <= 0.0) return 0;
  if (mean < 12.0) {
    // Inversion by sequential search.
    const double limit = std::exp(-mean);
    double p = Uniform();
    uint64_t k = 0;
    double term = limit;
    while (p > term && k < 1000) {
      p -= term;
      ++k;
      term *= mean / static_cast<double>(k);
    }
    return k;
  }
  // PTRS, Hormann (1993), "The transformed rejection method for generating
  // Poisson random variables".
  const double slam = std::sqrt(mean), loglam = std::log(mean);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2.0);
  while (true) {
    const double u = Uniform() - 0.5;
    const double v = UniformOpenZero();
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2.0 * a / us + b) * u + mean + 0.43);
    if (us >= 0.07 && v <= vr) return static_cast<uint64_t>(k);
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b) <=
        -mean + k * loglam - latentd::LogGamma(k + 1.0)) {
      return static_cast<uint64_t>(k);
    }
  }
}

}  // namespace latentd
