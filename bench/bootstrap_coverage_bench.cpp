// The coverage table of docs/analysis.md: how often the seed bootstrap's 95% intervals hold the
// true S_min and B_crit on simulated studies (results/bootstrap_coverage.h), for 2, 3 and 5 seeds
// per batch at 5 and 8 batch sizes, and at two seed-noise levels. Not a Google Benchmark: it prints
// one markdown table. Usage: bootstrap_coverage_bench [replications] [resamples] (defaults 1000 and
// 1000: about 45 seconds on two cores).
#include <cstdio>
#include <cstdlib>

#include "results/bootstrap_coverage.h"

int main(int argc, char** argv) {
  using batchlab::results::CoverageDesign;
  const int replications = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int resamples = argc > 2 ? std::atoi(argv[2]) : 1000;
  if (replications < 1 || resamples < 1) {
    std::fprintf(stderr, "usage: bootstrap_coverage_bench [replications] [resamples]\n");
    return 2;
  }
  std::printf("%s", batchlab::results::coverage_header().c_str());
  uint64_t generator_seed = 1;
  for (double noise : {0.05, 0.15}) {
    for (int batches : {5, 8}) {
      for (int seeds : {2, 3, 5}) {
        CoverageDesign d;
        d.seeds = seeds;
        d.batches = batches;
        d.noise_sd = noise;
        d.replications = replications;
        d.resamples = resamples;
        d.generator_seed = generator_seed++;
        const auto coverage = batchlab::results::simulate_coverage(d);
        std::printf("%s", batchlab::results::coverage_row(d, coverage).c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
