#include "sampler/hyperparams.h"

#include <algorithm>
#include <cmath>

#include "base/log_gamma.h"
#include "base/tsan.h"
#include "oneapi/tbb/blocked_range.h"
#include "oneapi/tbb/parallel_reduce.h"

namespace latentd {

double WordLogLikelihood(const TopicTable& table, double beta) {
  const double v_beta = static_cast<double>(table.vocab_size()) * beta;
  const double lgamma_beta = LogGamma(beta);
  double ll = 0;
  for (TopicId k = 0; k < table.num_topics(); ++k) {
    ll += LogGamma(v_beta) -
          LogGamma(static_cast<double>(table.TopicTotal(k)) + v_beta);
  }
  // For ThreadSanitizer (base/tsan.h): oneTBB orders the caller before the
  // bodies and the bodies before its return, out of TSan's sight. Static,
  // so that a body's Acquire needs no read of its closure (on the caller's
  // stack, which is what it orders).
  static const char before = 0, after = 0;
  tsan::Release(&before);
  ll += tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, table.vocab_size(), 256), 0.0,
      [&](const tbb::blocked_range<size_t>& range, double sum) {
        tsan::Acquire(&before);
        for (size_t w = range.begin(); w < range.end(); ++w) {
          table.ForEachNonZero(static_cast<WordId>(w), [&](TopicId, Count c) {
            sum += LogGamma(c + beta) - lgamma_beta;
          });
        }
        tsan::Release(&after);
        return sum;
      },
      [](double a, double b) { return a + b; });
  tsan::Acquire(&after);
  return ll;
}

namespace {

// Σ_n hist[n] · (ψ(n + a) − ψ(a)), using ψ(n+a) − ψ(a) = Σ_{i<n} 1/(a+i).
double DigammaSum(const std::vector<uint32_t>& hist, double a) {
  double total = 0, digamma_diff = 0;
  for (size_t n = 1; n < hist.size(); ++n) {
    digamma_diff += 1.0 / (a + static_cast<double>(n) - 1.0);
    if (hist[n] != 0) total += hist[n] * digamma_diff;
  }
  return total;
}

}  // namespace

std::vector<double> UpdateAlpha(const std::vector<double>& alpha,
                                const DocTopicStats& stats,
                                const AlphaUpdateOptions& options) {
  std::vector<double> a = alpha;
  const auto& topic_hist = stats.topic_histogram();
  for (int it = 0; it < options.iterations; ++it) {
    double a0 = 0;
    for (double x : a) a0 += x;
    const double denominator = DigammaSum(stats.length_histogram(), a0);
    if (denominator <= 0) return alpha;  // no documents: nothing to learn
    double change = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      const double next =
          std::max(options.min_alpha,
                   a[k] * DigammaSum(topic_hist[k], a[k]) / denominator);
      change = std::max(change, std::abs(next - a[k]) / a[k]);
      a[k] = next;
    }
    if (change < 1e-6) break;
  }
  return a;
}

}  // namespace latentd
