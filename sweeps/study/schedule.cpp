#include "sweeps/study/schedule.h"

#include <tuple>

namespace batchlab::sweeps::study {

bool starts_before(const PendingTrial& a, const PendingTrial& b, SchedulePolicy policy) {
  const auto spec = [](const PendingTrial& t) { return std::make_tuple(t.cell, t.order); };
  if (policy == SchedulePolicy::spec_order) return spec(a) < spec(b);
  if (a.chain_work != b.chain_work) return a.chain_work > b.chain_work;
  if (a.trial_work != b.trial_work) return a.trial_work > b.trial_work;
  return spec(a) < spec(b);
}

std::optional<size_t> next_trial(const std::vector<PendingTrial>& pending, SchedulePolicy policy) {
  std::optional<size_t> next;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!next || starts_before(pending[i], pending[*next], policy)) next = i;
  }
  return next;
}

}  // namespace batchlab::sweeps::study
