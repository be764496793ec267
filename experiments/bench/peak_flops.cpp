#include "experiments/bench/peak_flops.h"

#include <vector>

namespace batchlab::experiments {
namespace {

struct Entry {
  const char* must_contain;      // in the CUDA device name
  const char* second_must;       // also in it ("" = no second condition)
  const char* must_not_contain;  // a board variant with other clocks ("" = none)
  const char* precision;
  double tflops;
  const char* source;
};

bool has(const std::string& name, const char* part) {
  return part[0] == '\0' || name.find(part) != std::string::npos;
}

const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      {"H100", "HBM3", "", "bf16", 989.0,
       "NVIDIA H100 SXM5, bf16 dense (datasheet: 1,979 TFLOP/s with sparsity)"},
      {"H200", "", "NVL", "bf16", 989.0,
       "NVIDIA H200 SXM, bf16 dense (datasheet: 1,979 TFLOP/s with sparsity)"},
  };
  return entries;
}

}  // namespace

std::optional<DevicePeak> known_peak(const std::string& device_name, const std::string& precision) {
  for (const Entry& e : table()) {
    if (precision == e.precision && has(device_name, e.must_contain) &&
        has(device_name, e.second_must) &&
        (e.must_not_contain[0] == '\0' || !has(device_name, e.must_not_contain))) {
      return DevicePeak{e.tflops, e.source};
    }
  }
  return std::nullopt;
}

}  // namespace batchlab::experiments
