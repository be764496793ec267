// Family-wise error control for the several verdicts of one `batchlab compare`: Holm's step-down
// procedure (Holm 1979, "A simple sequentially rejective multiple test procedure", Scand. J.
// Statist. 6:65-70). With m tests and p-values sorted ascending p_(1) <= ... <= p_(m), the adjusted
// p-value of the i-th is
//   p~_(i) = max over j <= i of min(1, (m - j + 1) p_(j)),
// and a test is rejected at family-wise level alpha when p~ < alpha. The chance that any of the m
// verdicts is wrong when no difference exists is then at most alpha whatever the dependence between
// the tests, which is why it fits compare: its per-batch ratios, the pooled ratio and the fit
// ratios all come from the same seeds. It rejects everything Bonferroni (m p < alpha) rejects, and
// more.
//
// A comparison with 6 batches and 3 seeds a side that states a verdict wherever a batch's own 95%
// interval excludes 1 prints at least one false verdict in about 1 - 0.95^6 = 26% of comparisons
// with no true difference (19.5% as simulated with compare's own rule, issue 46: the intervals are
// not independent); tests/analysis/compare_family_test.cpp measures the rate with Holm.
#pragma once

#include <vector>

namespace batchlab::results {

// The level at which compare's verdicts are stated: the family-wise error over one comparison.
inline constexpr double kFamilyWiseLevel = 0.05;

// Holm-adjusted p-values, in the order of `p`. Throws std::invalid_argument for a p-value outside
// [0, 1] or NaN.
std::vector<double> holm_adjusted(const std::vector<double>& p);

}  // namespace batchlab::results
