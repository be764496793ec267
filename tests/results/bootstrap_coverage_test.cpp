// The seed bootstrap's 95% intervals hold the truth nearly as often as they say (results/
// bootstrap_coverage.h): on simulated studies with 3 and 5 seeds per batch, coverage of the true
// S_min and B_crit must not fall below 90%. Fewer resamples than the docs table
// (bench/bootstrap_coverage_bench), so it stays fast (a few seconds); 1000 replications measure a
// coverage to about +-0.8%. Plain resampling within batches, without the widening of the seeds'
// deviations (results/seed_bootstrap.h), covers 82-85% at 3 seeds and 87-88% at 5 seeds on 5
// batches: both tests fail.
#include "results/bootstrap_coverage.h"

#include <gtest/gtest.h>

namespace batchlab::results {
namespace {

void expect_coverage(int seeds, int batches, double noise_sd, uint64_t generator_seed) {
  CoverageDesign d;
  d.seeds = seeds;
  d.batches = batches;
  d.noise_sd = noise_sd;
  d.replications = 1000;
  d.resamples = 200;
  d.generator_seed = generator_seed;
  const Coverage c = simulate_coverage(d);
  ASSERT_EQ(c.stated, d.replications) << "every replication has >= 3 seeds: an interval each";
  EXPECT_GE(c.s_min_in, 0.9 * c.stated) << coverage_row(d, c);
  EXPECT_GE(c.b_crit_in, 0.9 * c.stated) << coverage_row(d, c);
}

TEST(BootstrapCoverage, ThreeSeedsCoverAtLeast90Percent) {
  expect_coverage(3, 5, 0.1, 11);
  expect_coverage(3, 8, 0.1, 12);
}

TEST(BootstrapCoverage, FiveSeedsCoverAtLeast90Percent) {
  expect_coverage(5, 5, 0.1, 13);
  expect_coverage(5, 8, 0.1, 14);
}

TEST(BootstrapCoverage, TwoSeedsStateNoInterval) {
  CoverageDesign d;
  d.seeds = 2;
  d.replications = 5;
  d.resamples = 50;
  const Coverage c = simulate_coverage(d);
  EXPECT_EQ(c.stated, 0);
  EXPECT_EQ(c.ranged, d.replications);  // the per-seed range instead
}

TEST(BootstrapCoverage, BatchesArePowersOfTwoAroundBCrit) {
  CoverageDesign d;
  d.batches = 5;
  EXPECT_EQ(coverage_batches(d), (std::vector<double>{256, 512, 1024, 2048, 4096}));
  d.batches = 8;
  EXPECT_EQ(coverage_batches(d),
            (std::vector<double>{128, 256, 512, 1024, 2048, 4096, 8192, 16384}));
}

}  // namespace
}  // namespace batchlab::results
