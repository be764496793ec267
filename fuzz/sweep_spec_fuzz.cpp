// A sweep spec (`batchlab sweep plan SWEEP.toml`): parsed and checked (sweeps/spec.h).
#include "fuzz/fuzz_support.h"
#include "sweeps/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  fuzz::refuse_only_as_input_error(
      [&] { sweeps::parse_sweep_spec(fuzz::as_text(data, size), "fuzz_sweep.toml"); });
  return 0;
}
