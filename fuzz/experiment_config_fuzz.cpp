// An experiment config (`batchlab train CONFIG.toml`): parsed, validated and, when accepted,
// written back as canonical TOML and hashed into its run id (core/config/loader.h).
#include "core/config/loader.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  fuzz::refuse_only_as_input_error([&] {
    const auto cfg = config::parse_experiment(fuzz::as_text(data, size), "fuzz.toml");
    config::run_id(cfg);
  });
  return 0;
}
