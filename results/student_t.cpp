#include "results/student_t.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace batchlab::results {

namespace {

// The continued fraction of I_x(a, b) (modified Lentz), valid for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  constexpr int kMaxTerms = 500;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= kMaxTerms; ++m) {
    const double m2 = 2.0 * m;
    // The even step, then the odd one.
    double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + aa * d;
    c = 1.0 + aa / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + aa * d;
    c = 1.0 + aa / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kEpsilon) break;
  }
  return h;
}

// The regularized incomplete beta function I_x(a, b), 0 <= x <= 1.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  // The fraction converges fast on one side of the mean; the symmetry I_x(a,b) = 1 - I_1-x(b,a)
  // covers the other.
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0.0) || !(b > 0.0)) {
    throw std::invalid_argument("regularized_incomplete_beta: a and b must be positive");
  }
  return incomplete_beta(a, b, x);
}

namespace {

void check_dof(double dof) {
  if (!(dof > 0.0) || !std::isfinite(dof)) {
    throw std::invalid_argument("Student's t: degrees of freedom must be positive and finite");
  }
}

}  // namespace

double student_t_cdf(double t, double dof) {
  check_dof(dof);
  if (std::isinf(t)) return t > 0.0 ? 1.0 : 0.0;
  const double tail = 0.5 * incomplete_beta(dof / 2.0, 0.5, dof / (dof + t * t));
  return t >= 0.0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double dof) {
  check_dof(dof);
  if (!(p > 0.0 && p < 1.0)) {
    throw std::invalid_argument("student_t_quantile: p must lie strictly between 0 and 1");
  }
  if (p < 0.5) return -student_t_quantile(1.0 - p, dof);
  // Bracket [0, hi] with CDF(hi) >= p, then halve it: 200 halvings reach the double's resolution.
  double lo = 0.0, hi = 1.0;
  while (student_t_cdf(hi, dof) < p) hi *= 2.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, hi); ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, dof) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double welch_dof(double var_a, double n_a, double var_b, double n_b) {
  if (!(n_a >= 2.0) || !(n_b >= 2.0)) {
    throw std::invalid_argument("welch_dof: each sample needs at least 2 values");
  }
  const double qa = var_a / n_a, qb = var_b / n_b;
  const double denominator = qa * qa / (n_a - 1.0) + qb * qb / (n_b - 1.0);
  if (!(denominator > 0.0)) return std::min(n_a, n_b) - 1.0;
  return (qa + qb) * (qa + qb) / denominator;
}

}  // namespace batchlab::results
