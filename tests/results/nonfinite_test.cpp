// Non-finite values: NaN, +inf and -inf survive a round trip through SQLite (which would turn NaN
// into NULL) and stay distinct from a value that was never measured.
#include "results/nonfinite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "results/errors.h"
#include "results/store.h"
#include "tests/results/test_support.h"

namespace batchlab::results {
namespace {

using testing::RawDb;
using testing::TempDir;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Nonfinite, WriterNamesNonFiniteValuesAndBindsNull) {
  NonfiniteWriter nf;
  EXPECT_EQ(nf.note("lr", 0.5), 0.5);
  EXPECT_EQ(nf.note("train_loss", kNaN), std::nullopt);
  EXPECT_EQ(nf.note("grad_norm", std::optional<double>(kInf)), std::nullopt);
  EXPECT_EQ(nf.note("missing", std::optional<double>()), std::nullopt);
  EXPECT_EQ(nf.note("ratio", -kInf), std::nullopt);
  EXPECT_EQ(nf.text(), "train_loss=nan,grad_norm=inf,ratio=-inf");
  EXPECT_EQ(NonfiniteWriter().text(), std::nullopt);
}

TEST(Nonfinite, ReaderRestoresOnlyNamedNulls) {
  const NonfiniteReader nf(std::string("train_loss=nan,grad_norm=inf,ratio=-inf"), "x.db");
  EXPECT_TRUE(std::isnan(nf.restore("train_loss", std::nullopt).value()));
  EXPECT_EQ(nf.restore("grad_norm", std::nullopt), kInf);
  EXPECT_EQ(nf.restore("ratio", std::nullopt), -kInf);
  EXPECT_EQ(nf.restore("lr", std::nullopt), std::nullopt);
  EXPECT_EQ(nf.restore("lr", 0.25), 0.25);
  EXPECT_TRUE(std::isnan(nf.restore_required("epoch", std::nullopt)));
}

TEST(Nonfinite, MalformedTextIsAnError) {
  EXPECT_THROW(NonfiniteReader(std::string("train_loss"), "x.db"), StoreError);
  EXPECT_THROW(NonfiniteReader(std::string("train_loss=1.5"), "x.db"), StoreError);
  EXPECT_THROW(NonfiniteReader(std::string("=nan"), "x.db"), StoreError);
  EXPECT_NO_THROW(NonfiniteReader(std::optional<std::string>(), "x.db"));
}

TEST(Nonfinite, RoundTripThroughTheStoreKeepsNanInfAndMissingApart) {
  TempDir dir;
  const std::string path = dir.file("nonfinite.db");
  Store store(path);
  RunRow run;
  run.run_id = "r1";
  run.status = "running";
  store.upsert_run(run);

  StepRow step;
  step.run_id = "r1";
  step.step = 7;
  step.epoch = 1.0;
  step.samples = 100;
  step.wall_s = 2.0;
  step.lr = 0.1;
  step.train_loss = kNaN;
  step.grad_norm = kInf;
  step.samples_per_s = std::nullopt;  // not measured
  store.write_steps({step});

  EvalRow eval;
  eval.run_id = "r1";
  eval.step = 7;
  eval.train_loss = kInf;
  eval.test_loss = kNaN;
  eval.test_acc = 0.1;
  store.write_evals({eval});

  store.write_layer_stats({LayerStatRow{"r1", 7, "fc", 10, 1.0, 0.0, kInf, -kInf, std::nullopt}});
  store.write_noise({NoiseRow{"r1", 7, 32, 256, 0.0, 5.0, kInf}});

  const auto steps = store.read_steps("r1");
  ASSERT_EQ(steps.size(), 1u);
  ASSERT_TRUE(steps[0].train_loss.has_value());
  EXPECT_TRUE(std::isnan(*steps[0].train_loss));
  EXPECT_EQ(steps[0].grad_norm, kInf);
  EXPECT_EQ(steps[0].samples_per_s, std::nullopt);
  EXPECT_EQ(steps[0].lr, 0.1);

  const auto evals = store.read_evals("r1");
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_EQ(evals[0].train_loss, kInf);
  EXPECT_TRUE(std::isnan(evals[0].test_loss.value()));
  // gap_loss = nan - inf = nan: computed, non-finite, restored.
  EXPECT_TRUE(std::isnan(evals[0].gap_loss.value()));
  EXPECT_EQ(evals[0].train_acc, std::nullopt);
  EXPECT_EQ(evals[0].gap_acc, std::nullopt);

  const auto layers = store.read_layer_stats("r1");
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].ratio, kInf);
  EXPECT_EQ(layers[0].trust_ratio, -kInf);
  EXPECT_EQ(layers[0].update_norm, std::nullopt);
  EXPECT_EQ(store.read_noise("r1").at(0).b_simple, kInf);

  // What SQL readers see: NULL in the value column, the explanation beside it.
  RawDb db(path);
  EXPECT_EQ(db.value("SELECT train_loss FROM steps"), std::nullopt);
  EXPECT_EQ(db.value("SELECT nonfinite FROM steps"), "train_loss=nan,grad_norm=inf");
  EXPECT_EQ(db.value("SELECT nonfinite FROM evals"), "train_loss=inf,test_loss=nan,gap_loss=nan");
  EXPECT_EQ(db.value("SELECT nonfinite FROM layer_stats"), "ratio=inf,trust_ratio=-inf");
  EXPECT_EQ(db.value("SELECT nonfinite FROM noise_scale"), "b_simple=inf");
}

TEST(Nonfinite, FiniteRowsHaveNullNonfinite) {
  TempDir dir;
  const std::string path = dir.file("finite.db");
  Store store(path);
  RunRow run;
  run.run_id = "r1";
  run.status = "running";
  store.upsert_run(run);
  StepRow step;
  step.run_id = "r1";
  step.step = 1;
  step.train_loss = 1.0;
  store.write_steps({step});
  RawDb db(path);
  EXPECT_EQ(db.value("SELECT nonfinite FROM steps"), std::nullopt);
}

}  // namespace
}  // namespace batchlab::results
