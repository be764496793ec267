// The decisions of a fixed-budget search (successive halving, sweeps/study/budget_plan.h), as pure
// functions of what each point of a cell has measured: no I/O, no clock, so the coordinator, its
// resume after a kill (which rebuilds the views from stored evaluations) and the tests decide
// alike.
//
//   rung k      the points still in the search train to r_k and are compared there;
//   promotion   the best ceil(n_k / eta) of rung k by the metric at r_k go on to r_{k+1}; a point
//               without a finite value there (diverged, or a non-finite metric) never goes on;
//               ties go to the lower point index (a fixed order, so a resume decides the same);
//   the best    the best at the last rung (the budget) is the cell's point.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace batchlab::sweeps::study {

// What the decisions see of one point of a cell.
struct PointView {
  bool running = false;              // its run is training now
  bool diverged = false;             // its run ended as diverged
  int64_t last_step = 0;             // updates it has trained (0: never started)
  std::map<int64_t, double> metric;  // step -> the search metric, finite evaluations only
};

// The value of `p` at `step`, nullopt when it has none there (not trained that far, or not finite).
std::optional<double> value_at(const PointView& p, int64_t step);

// Whether `a` is better than `b` for the metric (lower loss, higher accuracy).
bool better(double a, double b, bool lower_is_better);

// The points of `members` that go on: the best ceil(|members| / eta) with a finite value at
// `step`, in their rank order.
std::vector<size_t> promote(const std::vector<PointView>& points,
                            const std::vector<size_t>& members, int64_t step, int64_t eta,
                            bool lower_is_better);

struct HalvingStep {
  size_t rung = 0;               // the rung the search is at
  std::vector<size_t> members;   // the points in it
  std::vector<size_t> to_start;  // members that must train to the rung and are not running
  bool complete = false;
  std::optional<size_t> best;  // when complete: nullopt if no point kept a finite metric
  // Every point's last rung: the highest rung it was a member of (for the trial rows).
  std::vector<size_t> last_rung;
};

// Where the cell's search stands: walk the rungs from the first, promoting at each one that every
// member has finished (a value at r_k, or diverged / no finite value having trained past it);
// stop at the first rung with a member still to train (to_start: those not running).
HalvingStep halving_step(const std::vector<PointView>& points, const std::vector<int64_t>& rungs,
                         int64_t eta, bool lower_is_better);

}  // namespace batchlab::sweeps::study
