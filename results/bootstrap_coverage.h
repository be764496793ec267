// How often the seed bootstrap's 95% intervals (results/seed_bootstrap.h) hold the truth, measured
// on simulated studies: a known curve S(B) = S_min (1 + B_crit / B), every seed's steps at every
// batch multiplied by an independent lognormal factor (the seed-to-seed spread of steps to target),
// then the study's fit and bootstrap as `batchlab report` computes them. Counting the replications
// whose stated interval contains the true S_min and B_crit gives the coverage an interval labelled
// 95% actually has at that design. A design with fewer than kMinSeedsForInterval seeds states no
// interval; for it (and every design) the per-seed range (results/seed_range.h) is counted too, to
// show what that range would cover if it were read as an interval. bench/bootstrap_coverage_bench
// prints the table of docs/analysis.md; tests/results/bootstrap_coverage_test.cpp keeps a floor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchlab::results {

struct CoverageDesign {
  int seeds = 3;          // per batch size
  int batches = 5;        // powers of 2 centred on B_crit (5: B_crit/4 .. 4 B_crit)
  double noise_sd = 0.1;  // sd of the log of each seed's steps
  int replications = 200;
  int resamples = 1000;                    // bootstrap resamples per replication
  double s_min = 1000.0, b_crit = 1024.0;  // the truth
  uint64_t generator_seed = 1;
};

// The design's batch sizes: `batches` powers of 2, the middle one (rounded down) B_crit's power.
std::vector<double> coverage_batches(const CoverageDesign& design);

struct Coverage {
  int replications = 0;
  int stated = 0;  // replications with a 95% interval (0 below kMinSeedsForInterval seeds)
  int s_min_in = 0, b_crit_in = 0;  // of them, intervals that contain the truth
  int b_crit_unbounded = 0;         // of them, B_crit intervals with an unbounded upper end
  int ranged = 0;                   // replications with a per-seed range
  int range_s_min_in = 0, range_b_crit_in = 0;  // of them, ranges that contain the truth
};

Coverage simulate_coverage(const CoverageDesign& design);

// One markdown row: | seeds | batches | noise | reps | S_min 95% | B_crit 95% | unbounded |
// range...
std::string coverage_row(const CoverageDesign& design, const Coverage& coverage);
std::string coverage_header();

}  // namespace batchlab::results
