// The chi-square goodness-of-fit check the sampler tests use to compare a
// kernel's draws with an exact law.
#ifndef LATENTD_TESTS_SAMPLER_CHI_SQUARE_H_
#define LATENTD_TESTS_SAMPLER_CHI_SQUARE_H_

#include <cmath>
#include <vector>

namespace latentd {

// Chi-square statistic of `observed` counts against probabilities `p`
// (summing to 1), cells expected fewer than 5 times pooled into one;
// *cells gets the number of cells.
inline double ChiSquare(const std::vector<int>& observed,
                        const std::vector<double>& p, int draws, int* cells) {
  double chi2 = 0, pooled_expected = 0, pooled_observed = 0;
  *cells = 0;
  for (size_t o = 0; o < p.size(); ++o) {
    const double expected = p[o] * draws;
    if (expected < 5) {
      pooled_expected += expected;
      pooled_observed += observed[o];
      continue;
    }
    chi2 += (observed[o] - expected) * (observed[o] - expected) / expected;
    ++*cells;
  }
  if (pooled_expected > 0) {
    chi2 += (pooled_observed - pooled_expected) *
            (pooled_observed - pooled_expected) / pooled_expected;
    ++*cells;
  }
  return chi2;
}

// P(chi2 > dof + 4.3·sqrt(2·dof)) < 0.001 for the degrees of freedom of
// these tests.
inline double ChiSquareBound(int cells) {
  const double dof = cells - 1;
  return dof + 4.3 * std::sqrt(2 * dof);
}

}  // namespace latentd

#endif  // LATENTD_TESTS_SAMPLER_CHI_SQUARE_H_
