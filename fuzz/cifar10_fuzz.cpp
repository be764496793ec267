// The CIFAR-10 binary distribution (data.path, experiments/data/cifar10.h): the input is read as
// one batch file (records of a label byte and 3072 pixels), and as batches.meta.txt beside five
// training batches and a test batch of one valid record each, so the whole load (class names,
// concatenation, channel statistics) runs on it.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "experiments/data/cifar10.h"
#include "fuzz/fuzz_support.h"

namespace {

// The folder of valid one-record batches, written once per process.
const std::string& cifar_dir() {
  static const std::string dir = [] {
    const auto path = batchlab::fuzz::scratch_dir() / "cifar";
    std::filesystem::create_directories(path);
    std::string record(batchlab::data::kCifarRecordBytes, '\x40');
    record[0] = 3;
    for (int i = 1; i <= batchlab::data::kCifarTrainFiles; ++i) {
      std::ofstream(path / fmt::format("data_batch_{}.bin", i), std::ios::binary) << record;
    }
    std::ofstream(path / "test_batch.bin", std::ios::binary) << record;
    return path.string();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  const auto bytes = fuzz::as_text(data, size);
  const std::string batch = fuzz::write_file("data_batch.bin", bytes);
  fuzz::refuse_only_as_input_error([&] {
    std::vector<torch::Tensor> images, labels;
    data::read_cifar10_file(batch, images, labels);
  });
  const auto meta = std::filesystem::path(cifar_dir()) / "batches.meta.txt";
  std::ofstream(meta, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  fuzz::refuse_only_as_input_error([&] { data::load_cifar10(cifar_dir()); });
  return 0;
}
