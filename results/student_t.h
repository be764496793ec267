// Student's t distribution for the intervals `batchlab compare` states over a few seeds: with 3
// seeds a side, a normal quantile (1.96) in place of t's (2.78 at 4 degrees of freedom) would call
// an interval of about 83% a 95% one. Welch's interval for a difference of two means has a
// fractional number of degrees of freedom (Welch-Satterthwaite), so the quantile is computed for
// any real dof > 0, not looked up in a table.
//
// The CDF is the regularized incomplete beta function, I_x(dof/2, 1/2) with x = dof / (dof + t^2),
// evaluated by its continued fraction (modified Lentz; Abramowitz and Stegun 26.5.8 and 26.7.1);
// the quantile inverts it by bisection on t, which the monotone CDF makes safe at any dof. Both are
// accurate to about 1e-10, far below what a seed interval needs.
#pragma once

namespace batchlab::results {

// P(T <= t) for Student's t with `dof` degrees of freedom. Throws std::invalid_argument for
// dof <= 0 or a non-finite dof.
double student_t_cdf(double t, double dof);

// The p-quantile (0 < p < 1) of Student's t with `dof` degrees of freedom. Throws
// std::invalid_argument for p outside (0, 1) or dof <= 0.
double student_t_quantile(double p, double dof);

// The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1 (x outside is
// clamped): Student's t CDF above, and the F distribution's in results/lack_of_fit.h.
double regularized_incomplete_beta(double a, double b, double x);

// Welch-Satterthwaite degrees of freedom of mean(a) - mean(b) from the two samples' variances
// (var_a, var_b: unbiased sample variances) and sizes (n_a, n_b >= 2). Returns the smaller of
// n_a - 1 and n_b - 1 when both variances are 0 (no spread to weigh).
double welch_dof(double var_a, double n_a, double var_b, double n_b);

}  // namespace batchlab::results
