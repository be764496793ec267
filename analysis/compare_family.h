// The family-wise control of `batchlab compare`'s verdicts (issue 46): the tests of one
// comparison (each batch's steps ratio, the pooled ratio, S_min and B_crit; those with a 95%
// interval, hence a p-value) are adjusted together by Holm's step-down procedure (results/holm.h),
// and a verdict stands only where the adjusted p is below results::kFamilyWiseLevel. A ratio whose
// own 95% interval excludes 1 but whose adjusted p does not clear the level loses its verdict and
// says why ("95% interval excludes 1, not at the family-wise 5% over 9 tests (Holm)"; the adjusted
// p is p_holm). With no true difference, the chance that a comparison prints any verdict is then at
// most 5% (tests/analysis/compare_family_test.cpp simulates it with compare's own code).
#pragma once

#include <vector>

#include "analysis/study_compare.h"

namespace batchlab::analysis {

// The comparison's tests, in the order batches (ascending), pooled, S_min, B_crit; only those
// with a p-value.
std::vector<RatioEstimate*> comparison_family(StudyComparison& comparison);

// Sets p_holm of every test of the family and `family`, and withdraws the verdicts Holm does not
// keep.
void control_family_wise(StudyComparison& comparison);

}  // namespace batchlab::analysis
