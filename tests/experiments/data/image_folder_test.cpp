#include "experiments/data/image_folder.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "tests/experiments/data/image_test_util.h"

namespace batchlab::data {
namespace {

using testing::make_image_folder;
using testing::ScratchDir;

TEST(ImageFolder, LabelsAreSortedFolderNamesAndFilesAreSorted) {
  ScratchDir dir;
  // Created out of order; labels follow the sorted names.
  make_image_folder(dir / "root", {"n0300", "n0100", "n0200"}, 3, 2);
  // Files that are not JPEGs, hidden files and stray files at the class level are ignored.
  testing::write_bytes(dir / "root/train/n0100/notes.txt", {1, 2, 3});
  testing::write_bytes(dir / "root/train/n0100/.hidden.JPEG", {1});
  testing::write_bytes(dir / "root/train/README", {1});
  const ImageFolderIndex index = scan_image_folder(dir / "root");
  EXPECT_EQ(index.classes, (std::vector<std::string>{"n0100", "n0200", "n0300"}));
  ASSERT_EQ(index.train.files.size(), 9u);
  ASSERT_EQ(index.val.files.size(), 6u);
  EXPECT_EQ(index.train.labels, (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(index.train.files[0], dir / "root/train/n0100/img_0.JPEG");
  EXPECT_EQ(index.train.files[8], dir / "root/train/n0300/img_2.JPEG");
  EXPECT_EQ(index.val.labels, (std::vector<int64_t>{0, 0, 1, 1, 2, 2}));

  FolderImageSource source(index);
  EXPECT_EQ(source.size(Split::train), 9);
  EXPECT_EQ(source.size(Split::test), 6);
  EXPECT_EQ(source.label(Split::test, 5), 2);
  EXPECT_EQ(source.location(Split::test, 0), dir / "root/val/n0100/img_0.JPEG");
  // Reading a sample: its size, then its pixels. Blue marks the position in the list the folder
  // was created from: n0200 was third.
  auto reader = source.make_reader();
  const JpegHeader h = reader->open(Split::train, 4);  // n0200/img_1: 64 x 46
  EXPECT_EQ(h.width, 64);
  EXPECT_EQ(h.height, 46);
  const ImageView v = reader->pixels({0, 0, 64, 46}, 32, 32);
  EXPECT_NEAR(v.pixels[2], testing::class_blue(2), 6);
  reader->open(Split::train, 0);  // n0100: second
  EXPECT_NEAR(reader->pixels({0, 0, 60, 44}, 32, 32).pixels[2], testing::class_blue(1), 6);
}

TEST(ImageFolder, JpegExtensionsInAnyCase) {
  EXPECT_TRUE(is_jpeg_name("a.JPEG"));
  EXPECT_TRUE(is_jpeg_name("a.jpeg"));
  EXPECT_TRUE(is_jpeg_name("a.JpG"));
  EXPECT_FALSE(is_jpeg_name("a.png"));
  EXPECT_FALSE(is_jpeg_name("jpeg"));
}

TEST(ImageFolder, MissingTrainFolderOrClassesAreInputErrors) {
  ScratchDir dir;
  try {
    scan_image_folder(dir / "nothing");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train/"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(dir / "empty/train");
  EXPECT_THROW(scan_image_folder(dir / "empty"), InputError);
  std::filesystem::create_directories(dir / "noimages/train/n01");
  EXPECT_THROW(scan_image_folder(dir / "noimages"), InputError);
}

TEST(ImageFolder, ValidationClassesMustExistInTraining) {
  ScratchDir dir;
  make_image_folder(dir / "root", {"a", "b"}, 1, 1);
  make_image_folder(dir / "root2", {"zzz"}, 0, 1);
  std::filesystem::rename(dir / "root2/val/zzz", dir / "root/val/zzz");
  try {
    scan_image_folder(dir / "root");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("zzz"), std::string::npos) << e.what();
  }
}

TEST(ImageFolder, ValidationFolderIsOptional) {
  ScratchDir dir;
  make_image_folder(dir / "root", {"a"}, 2, 0);
  std::filesystem::remove_all(dir / "root/val");
  const ImageFolderIndex index = scan_image_folder(dir / "root");
  EXPECT_EQ(index.train.files.size(), 2u);
  EXPECT_TRUE(index.val.files.empty());
}

}  // namespace
}  // namespace batchlab::data
