#include "analysis/compare_family.h"

#include <fmt/format.h>

#include "results/holm.h"

namespace batchlab::analysis {

std::vector<RatioEstimate*> comparison_family(StudyComparison& comparison) {
  std::vector<RatioEstimate*> out;
  auto add = [&out](RatioEstimate& r) {
    if (r.p) out.push_back(&r);
  };
  for (auto& row : comparison.batches) add(row.steps);
  add(comparison.pooled);
  add(comparison.s_min);
  add(comparison.b_crit);
  return out;
}

void control_family_wise(StudyComparison& comparison) {
  const auto family = comparison_family(comparison);
  std::vector<double> p;
  for (const auto* r : family) p.push_back(*r->p);
  const auto adjusted = results::holm_adjusted(p);
  comparison.family = static_cast<int>(family.size());
  for (size_t i = 0; i < family.size(); ++i) {
    RatioEstimate& r = *family[i];
    r.p_holm = adjusted[i];
    if (r.verdict == Verdict::kNone || adjusted[i] < results::kFamilyWiseLevel) continue;
    r.verdict = Verdict::kNone;
    r.why =
        fmt::format("95% interval excludes 1, not at the family-wise {:g}% over {} tests (Holm)",
                    100.0 * results::kFamilyWiseLevel, family.size());
  }
}

}  // namespace batchlab::analysis
