// The batch ladder's stopping rule (docs/sweeps.md "Batch ladder"): a study that doubles the batch
// from a start towards a ceiling while the measured steps to target still fall by more than
// `min_gain` per doubling (Shallue et al. 2019: past the critical batch a doubling saves less and
// less). The coordinator (sweeps/study/engine.cpp) asks it whether a group of lines may open its
// next batch, and the report (analysis/study_report.cpp) asks it why the ladder stopped, over the
// same stored cell results: one implementation, here, because both sweeps/ and analysis/ read
// results/ and neither may read the other (DESIGN.md), as with results/scaling_fit.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::results {

// Defaults of [study.ladder] min_gain and flat_doublings (the spec reader and the report, which
// reads the stored spec, both fill them in from here).
inline constexpr double kLadderDefaultMinGain = 1.3;
inline constexpr int64_t kLadderDefaultFlatDoublings = 2;

struct LadderRule {
  int64_t ceiling = 0;                      // the largest batch the ladder may reach
  double min_gain = kLadderDefaultMinGain;  // a doubling "pays" when steps fall by more than this
  int64_t flat_doublings = kLadderDefaultFlatDoublings;  // consecutive doublings below min_gain
  // The per-trial cap of [study] max_steps / max_samples (nullopt: not given) and whether a rung
  // whose cap cannot hold the steps the rung below needed stays closed ([study.ladder]
  // budget_stop, default true).
  std::optional<int64_t> max_steps, max_samples;
  bool budget_stop = true;
  // How many censored rungs a line that has not reached the target at any batch yet may climb
  // past ([study.ladder] censored_rungs, default 0: the first censored rung ends the ladder).
  int64_t censored_rungs = 0;
};

// The largest cap in steps a trial at `batch` gets from [study] max_steps or max_samples
// (ceil(max_samples / batch)); nullopt when neither is given. The study's plan and the ladder's
// budget rule both take it from here.
std::optional<int64_t> study_max_cap_steps(std::optional<int64_t> max_steps,
                                           std::optional<int64_t> max_samples, int64_t batch);

// One rung: a batch size and its cells' results, one per seed. Every cell of the rung has its
// answer (reached: steps to target; censored: nullopt).
struct LadderRung {
  int64_t batch = 0;
  std::vector<std::optional<double>> steps;
};

enum class LadderStop { none, flattening, ceiling, cap, budget };
const char* ladder_stop_name(LadderStop stop);  // "", flattening, ceiling, cap, budget

struct LadderVerdict {
  LadderStop stop = LadderStop::none;  // none: the ladder may open the next batch
  size_t rungs = 0;                    // rungs the rule went through (it stopped at the last)
  // Per rung gone through, the geometric mean of its seeds' steps (nullopt: a seed was censored).
  std::vector<std::optional<double>> steps;
  // gains[i] = steps[i] / steps[i + 1]: how much doubling rung i's batch saved; +infinity where
  // rung i was censored (the saving is only known to exceed its cap / steps[i + 1]), which never
  // counts as flat.
  std::vector<double> gains;
};

// Walks the rungs in ascending batch order and stops at the first rung where the rule says so:
// cap (a seed did not reach the target within its cap: the next batch cannot be compared; except
// that a line with no reached rung yet climbs past up to `censored_rungs` censored rungs, because
// under a cap in steps a slow optimizer may first reach at a larger batch: LARS on the text study
// was censored at batch 16 within 6,000 steps at every rate and both trust coefficients, where
// LAMB needed 784),
// flattening (the last `flat_doublings` doublings each saved less than min_gain), ceiling (the
// rung is at the ceiling), budget (the next batch's cap is below the steps a seed needed at this
// one: past B_crit, where the ladder goes, a doubling saves few steps, so its cells would run to
// that cap and end censored; the rung is beyond the sample budget and is not run. A Fashion-MNIST
// LAMB ladder under max_samples 300,000 opened batch 4096 with a 74-step cap after a seed needed
// 94 steps at 2048, and its trials all ran to the cap: 1.2M of the study's 5.5M samples). With no
// stop the next batch may open. A rung's steps are the geometric
// mean over its seeds, the point the report's fit uses. Seeds always move together: a group of
// lines that differ only in the seed goes up or stops as one.
LadderVerdict walk_ladder(const std::vector<LadderRung>& rungs, const LadderRule& rule);

// Why it stopped, for people: "flattening (2048->4096 saved 1.12x, 1024->2048 1.21x < 1.3x)",
// "ceiling (4096; 2048->4096 saved 1.6x)", "cap (batch 4096: 1 of 2 seeds did not reach the target
// within the cap)", "budget (batch 4096's cap of 74 steps from max_samples 300000 is below the 94
// steps a seed needed at 2048)"; "" when it did not stop.
std::string describe_ladder_stop(const LadderVerdict& verdict, const std::vector<LadderRung>& rungs,
                                 const LadderRule& rule);

}  // namespace batchlab::results
