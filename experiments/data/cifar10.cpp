#include "experiments/data/cifar10.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "experiments/data/jpeg_codec.h"

namespace batchlab::data {
namespace fs = std::filesystem;
namespace {

// batches.meta.txt: one name per line (the distribution pads the file with empty lines).
std::vector<std::string> read_class_names(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (names.size() != 10) {
    throw DataError(fmt::format("{}: {} class names, CIFAR-10 has 10 (one per line)", path.string(),
                                names.size()));
  }
  return names;
}

}  // namespace

const std::vector<std::string>& cifar10_class_names() {
  static const std::vector<std::string> names = {
      "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  return names;
}

void read_cifar10_file(const std::string& path, std::vector<torch::Tensor>& images,
                       std::vector<torch::Tensor>& labels) {
  if (!fs::is_regular_file(path)) {
    throw DataError(
        fmt::format("{}: missing; data.path must be the extracted cifar-10-batches-bin "
                    "directory (data_batch_1.bin .. data_batch_5.bin, test_batch.bin)",
                    path));
  }
  std::vector<uint8_t> bytes;
  read_file_bytes(path, bytes);
  const auto size = static_cast<int64_t>(bytes.size());
  const int64_t records = size / kCifarRecordBytes;
  if (size == 0 || size % kCifarRecordBytes != 0) {
    throw DataError(
        fmt::format("{}: truncated: {} bytes is not a whole number of {}-byte records; "
                    "record {} has only {} of its bytes",
                    path, size, kCifarRecordBytes, records, size % kCifarRecordBytes));
  }
  auto image = torch::empty({records, 3, kCifarSide, kCifarSide}, torch::kUInt8);
  auto label = torch::empty({records}, torch::kInt64);
  uint8_t* ip = image.data_ptr<uint8_t>();
  int64_t* lp = label.data_ptr<int64_t>();
  constexpr int64_t pixels = kCifarRecordBytes - 1;
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t* rec = bytes.data() + r * kCifarRecordBytes;
    if (rec[0] > 9) {
      throw DataError(fmt::format("{}: record {} has label {}, outside 0..9", path, r, rec[0]));
    }
    lp[r] = rec[0];
    // The record's pixels are already planar R, G, B rows: the [3, 32, 32] layout.
    std::copy(rec + 1, rec + 1 + pixels, ip + r * pixels);
  }
  images.push_back(image);
  labels.push_back(label);
}

std::optional<int64_t> cifar10_train_count(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  int64_t records = 0;
  for (int64_t i = 1; i <= kCifarTrainFiles; ++i) {
    std::error_code ec;
    const auto size = fs::file_size(fs::path(dir) / fmt::format("data_batch_{}.bin", i), ec);
    const auto bytes = static_cast<int64_t>(size);
    if (ec || bytes == 0 || bytes % kCifarRecordBytes != 0) return std::nullopt;
    records += bytes / kCifarRecordBytes;
  }
  return records;
}

ImageDataset load_cifar10(const std::string& dir) {
  if (dir.empty()) {
    throw InputError(
        "data.path is empty: data.dataset = \"cifar10\" needs the extracted binary distribution "
        "(the cifar-10-batches-bin directory of cifar-10-binary.tar.gz); no package installs it");
  }
  std::vector<torch::Tensor> train_images, train_labels, test_images, test_labels;
  for (int64_t i = 1; i <= kCifarTrainFiles; ++i) {
    read_cifar10_file((fs::path(dir) / fmt::format("data_batch_{}.bin", i)).string(), train_images,
                      train_labels);
  }
  read_cifar10_file((fs::path(dir) / "test_batch.bin").string(), test_images, test_labels);

  ImageDataset ds;
  ds.name = "cifar10";
  ds.source = dir;
  ds.train_images = torch::cat(train_images);
  ds.train_labels = torch::cat(train_labels);
  ds.test_images = torch::cat(test_images);
  ds.test_labels = torch::cat(test_labels);
  const fs::path meta = fs::path(dir) / "batches.meta.txt";
  ds.class_names = fs::is_regular_file(meta) ? read_class_names(meta) : cifar10_class_names();
  ds.num_classes = static_cast<int64_t>(ds.class_names.size());
  compute_channel_stats(ds.train_images, ds.mean, ds.stddev);
  return ds;
}

}  // namespace batchlab::data
