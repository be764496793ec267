// A .safetensors file (model.init_from, export's input): models/safetensors.h.
#include "fuzz/fuzz_support.h"
#include "models/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  const std::string path = fuzz::write_file("input.safetensors", fuzz::as_text(data, size));
  fuzz::refuse_only_as_input_error([&] { models::read_safetensors(path); });
  return 0;
}
