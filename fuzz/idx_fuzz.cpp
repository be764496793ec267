// An IDX file (Fashion-MNIST, data.path): experiments/data/idx_reader.h, as images and as labels.
#include "experiments/data/idx_reader.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  const std::string path = fuzz::write_file("input-idx3-ubyte", fuzz::as_text(data, size));
  fuzz::refuse_only_as_input_error([&] { data::read_idx_count(path); });
  fuzz::refuse_only_as_input_error([&] { data::read_idx_images(path); });
  fuzz::refuse_only_as_input_error([&] { data::read_idx_labels(path); });
  return 0;
}
