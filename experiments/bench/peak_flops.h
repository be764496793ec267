// Peak dense throughput of accelerators `batchlab bench` knows, for model FLOP utilisation:
// MFU = achieved model FLOP/s / the device's peak at the precision the matrix products run in.
// Only peaks with a published source are listed; anything else needs --peak-tflops.
#pragma once

#include <optional>
#include <string>

namespace batchlab::experiments {

struct DevicePeak {
  double tflops = 0.0;  // dense (no 2:4 sparsity), TFLOP/s
  std::string source;   // which device entry and where the number comes from
};

// The peak of the device named `device_name` (train::device_name: "NVIDIA H100 80GB HBM3") for
// `precision` ("bf16", "fp32"), or nullopt when the table has none.
//   H100 SXM5 ("NVIDIA H100 80GB HBM3"), bf16: 989 TFLOP/s (NVIDIA H100 datasheet: 1,979 with
//     sparsity; the PCIe and NVL boards run lower clocks and are not listed).
//   H200 SXM ("NVIDIA H200"; not the NVL board), bf16: 989 TFLOP/s (NVIDIA H200 datasheet: the same
//     1,979 with sparsity).
// No fp32 entries: what fp32 runs on depends on LibTorch's TF32 switches (cuDNN convolutions use
// TF32 by default, matrix products do not), so no single peak describes an fp32 run.
std::optional<DevicePeak> known_peak(const std::string& device_name, const std::string& precision);

}  // namespace batchlab::experiments
