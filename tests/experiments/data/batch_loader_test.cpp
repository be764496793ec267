#include "experiments/data/batch_loader.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/errors.h"
#include "experiments/data/image_folder.h"
#include "tests/experiments/data/image_test_util.h"

namespace batchlab::data {
namespace {

using testing::class_blue;
using testing::make_image_folder;
using testing::ScratchDir;

constexpr int64_t kSide = 32;

TransformSpec small_spec() {
  TransformSpec spec;
  spec.image_size = kSide;
  spec.eval_resize = 36;
  spec.min_scale = 0.08;
  return spec;
}

std::shared_ptr<const ImageSource> folder_source(const std::string& root) {
  return std::make_shared<FolderImageSource>(scan_image_folder(root));
}

BatchLoader make_loader(std::shared_ptr<const ImageSource> source, int64_t workers,
                        bool skip = false, int64_t prefetch = 4) {
  LoaderOptions o;
  o.workers = workers;
  o.prefetch = prefetch;
  o.skip_corrupt = skip;
  return BatchLoader(std::move(source), small_spec(), o);
}

torch::Tensor idx(std::vector<int64_t> v) { return torch::tensor(v, torch::kInt64); }

class BatchLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { make_image_folder(dir_ / "root", {"cat", "dog", "eel"}, 6, 2); }
  ScratchDir dir_;
};

TEST_F(BatchLoaderTest, BatchesAreIdenticalWithZeroOneAndFourWorkers) {
  auto source = folder_source(dir_ / "root");
  const auto order = idx({17, 3, 9, 0, 12, 5, 8, 16, 1, 11});
  std::vector<ImageBatch> train, eval;
  for (int64_t workers : {0, 1, 4}) {
    BatchLoader loader(source, small_spec(), {workers, 4, false, true});
    train.push_back(loader.load(Split::train, order, 1234));
    eval.push_back(loader.load(Split::test, idx({5, 0, 3}), std::nullopt));
  }
  for (size_t k = 1; k < train.size(); ++k) {
    EXPECT_TRUE(torch::equal(train[0].images, train[k].images)) << "workers index " << k;
    EXPECT_TRUE(torch::equal(train[0].labels, train[k].labels));
    EXPECT_TRUE(torch::equal(eval[0].images, eval[k].images));
  }
  EXPECT_EQ(train[0].images.sizes(), (std::vector<int64_t>{10, 3, kSide, kSide}));
  EXPECT_EQ(train[0].images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(train[0].labels.scalar_type(), torch::kInt64);
}

TEST_F(BatchLoaderTest, LabelsComeFromFolderNamesAndMatchTheImages) {
  auto loader = make_loader(folder_source(dir_ / "root"), 2);
  const auto b = loader.load(Split::train, torch::arange(18, torch::kInt64), 7);
  for (int64_t i = 0; i < 18; ++i) {
    const int64_t label = b.labels[i].item<int64_t>();
    EXPECT_EQ(label, i / 6);  // 6 images per class, classes in sorted order
    // Blue is constant per class in these images, whatever the crop.
    const double blue = b.images[i][2].to(torch::kFloat).mean().item<double>();
    EXPECT_NEAR(blue, class_blue(label), 6.0) << i;
  }
  const auto v = loader.load(Split::test, torch::arange(6, torch::kInt64), std::nullopt);
  EXPECT_EQ(v.labels[5].item<int64_t>(), 2);
}

TEST_F(BatchLoaderTest, SeedsDrawTheAugmentationAndTheEvalTransformIsFixed) {
  auto source = folder_source(dir_ / "root");
  auto loader = make_loader(source, 0);
  const auto order = idx({4, 4, 4, 4});
  const auto a = loader.load(Split::train, order, 1);
  const auto b = loader.load(Split::train, order, 2);
  EXPECT_TRUE(torch::equal(a.images, loader.load(Split::train, order, 1).images));
  EXPECT_FALSE(torch::equal(a.images, b.images));
  // The same image at four positions of one batch: four different crops.
  EXPECT_FALSE(torch::equal(a.images[0], a.images[1]));
  // Eval: what load_sample makes with no seed (resize 36, center crop 32), twice the same.
  const auto e = loader.load(Split::train, order, std::nullopt);
  EXPECT_TRUE(torch::equal(e.images[0], e.images[3]));
  auto reader = source->make_reader();
  ResampleScratch scratch;
  std::vector<uint8_t> expected(3 * kSide * kSide);
  load_sample(*reader, Split::train, 4, small_spec(), std::nullopt, expected.data(), scratch);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), e.images[0].data_ptr<uint8_t>()));
  // With augment off, training requests get the eval transform too.
  BatchLoader plain(source, small_spec(), {0, 4, false, /*augment=*/false});
  EXPECT_TRUE(torch::equal(plain.load(Split::train, order, 1).images, e.images));
}

TEST_F(BatchLoaderTest, CorruptAndTruncatedJpegsAreErrorsNamingTheFile) {
  const std::string bad = dir_ / "root/train/dog/img_2.JPEG";  // train index 8
  testing::write_bytes(bad, {'G', 'I', 'F', '8', '9', 'a', 0, 0});
  const std::string cut = dir_ / "root/train/eel/img_0.JPEG";  // train index 12
  auto bytes = testing::read_bytes(cut);
  bytes.resize(bytes.size() / 2);
  testing::write_bytes(cut, bytes);
  auto source = folder_source(dir_ / "root");
  for (int64_t workers : {0, 3}) {
    auto loader = make_loader(source, workers);
    try {
      loader.load(Split::train, idx({1, 8, 2}), 5);
      FAIL() << "expected a DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
    try {
      loader.load(Split::train, idx({12}), std::nullopt);
      FAIL() << "expected a DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
    }
    // The loader keeps working for readable samples.
    EXPECT_NO_THROW(loader.load(Split::train, idx({0, 1}), 5));
  }
}

TEST_F(BatchLoaderTest, SkipModeReplacesUnreadableImagesByTheNextAndCountsThem) {
  testing::write_bytes(dir_ / "root/train/dog/img_2.JPEG", {1, 2, 3});  // index 8
  testing::write_bytes(dir_ / "root/train/dog/img_3.JPEG", {});         // index 9
  auto source = folder_source(dir_ / "root");
  for (int64_t workers : {0, 4}) {
    auto loader = make_loader(source, workers, /*skip=*/true);
    const auto b = loader.load(Split::train, idx({8, 9, 10, 0}), 77);
    EXPECT_EQ(loader.skipped_count(), 2);
    const auto messages = loader.skipped_messages();
    ASSERT_EQ(messages.size(), 2u);
    EXPECT_NE(messages[0].find("img_"), std::string::npos);
    // Position 0 and 1 both got index 10 (the next readable), each with its own position's crop.
    const auto ref = loader.load(Split::train, idx({10, 10, 10, 0}), 77);
    EXPECT_TRUE(torch::equal(b.images, ref.images));
    EXPECT_TRUE(torch::equal(b.labels, ref.labels));
    // Whole passes over the split go on; the count stays at the distinct files.
    loader.load(Split::train, torch::arange(18, torch::kInt64), 78);
    loader.load(Split::train, torch::arange(18, torch::kInt64), 79);
    EXPECT_EQ(loader.skipped_count(), 2);
  }
}

TEST_F(BatchLoaderTest, PlannedBatchesArePrefetchedAndIdenticalToOnDemandOnes) {
  auto source = folder_source(dir_ / "root");
  train::BatchPlan plan;
  plan.data_seed = 11;
  plan.geometry = train::make_batch_geometry(/*global=*/4, /*micro=*/2, /*world=*/1, 18);
  plan.train_size = 18;
  plan.first_step = 3;
  plan.end_step = 9;
  auto ahead = make_loader(source, 2, false, /*prefetch=*/3);
  auto inline_loader = make_loader(source, 0);
  ahead.plan(plan);
  // Ask in the trainer's order (data_order.h, mix_seed(mix_seed(seed, step + 1), j)).
  for (int64_t step = plan.first_step; step < plan.end_step; ++step) {
    const int64_t spe = plan.geometry.steps_per_epoch;
    const auto perm = train::epoch_permutation(plan.data_seed, step / spe, 18);
    const uint64_t step_seed = train::mix_seed(11, static_cast<uint64_t>(step) + 1);
    for (int64_t j = 0; j < plan.geometry.accum; ++j) {
      const auto indices = train::micro_batch_indices(perm, plan.geometry, step % spe, 0, j);
      const uint64_t seed = train::mix_seed(step_seed, static_cast<uint64_t>(j));
      const auto got = ahead.load(Split::train, indices, seed);
      const auto want = inline_loader.load(Split::train, indices, seed);
      ASSERT_TRUE(torch::equal(got.images, want.images)) << "step " << step << " micro " << j;
      ASSERT_TRUE(torch::equal(got.labels, want.labels));
    }
  }
  EXPECT_EQ(ahead.prefetch_hits(), 12);
  EXPECT_EQ(ahead.prefetch_misses(), 0);
  // A request outside the plan is built on demand, correctly.
  const auto odd = ahead.load(Split::train, idx({0, 1}), 999);
  EXPECT_TRUE(torch::equal(odd.images, inline_loader.load(Split::train, idx({0, 1}), 999).images));
  EXPECT_EQ(ahead.prefetch_misses(), 1);
}

TEST_F(BatchLoaderTest, ConsecutiveTestChunksAreReadAheadWithTheSameResult) {
  auto source = folder_source(dir_ / "root");
  auto ahead = make_loader(source, 2);
  auto inline_loader = make_loader(source, 0);
  for (int64_t start = 0; start < 6; start += 2) {
    const auto chunk = torch::arange(start, start + 2, torch::kInt64);
    EXPECT_TRUE(torch::equal(ahead.load(Split::test, chunk, std::nullopt).images,
                             inline_loader.load(Split::test, chunk, std::nullopt).images));
  }
  // Out of order after a read-ahead: still the right batch.
  EXPECT_TRUE(torch::equal(ahead.load(Split::test, idx({1}), std::nullopt).images,
                           inline_loader.load(Split::test, idx({1}), std::nullopt).images));
  EXPECT_TRUE(torch::equal(ahead.load(Split::test, idx({5, 4}), std::nullopt).images,
                           inline_loader.load(Split::test, idx({5, 4}), std::nullopt).images));
}

TEST_F(BatchLoaderTest, LimitedSourcesKeepEvenlySpreadSamples) {
  auto limited = limit_image_source(folder_source(dir_ / "root"), 6, 3);
  EXPECT_EQ(limited->size(Split::train), 6);
  EXPECT_EQ(limited->size(Split::test), 3);
  // floor(i * 18 / 6) = 0, 3, 6, ...: two per class.
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < 6; ++i) labels.push_back(limited->label(Split::train, i));
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 0, 1, 1, 2, 2}));
  EXPECT_NE(limited->location(Split::train, 1).find("cat/img_3.JPEG"), std::string::npos);
  auto loader = make_loader(limited, 0);
  EXPECT_EQ(loader.load(Split::train, idx({5}), 1).labels[0].item<int64_t>(), 2);
  EXPECT_THROW(limit_image_source(folder_source(dir_ / "root"), 19, 0), InputError);
  // A negative size is the schema's rule (core/config), asserted here: an internal error.
  EXPECT_THROW(limit_image_source(folder_source(dir_ / "root"), -1, 0), Error);
}

}  // namespace
}  // namespace batchlab::data
