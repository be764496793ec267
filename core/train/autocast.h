// Mixed precision for train.precision = "bf16": LibTorch's autocast around forward passes (matrix
// products and convolutions in bfloat16, reductions and losses in float32; weights, gradients and
// optimizer state stay float32). Backward runs outside the guard and follows the dtypes the
// forward chose, as torch.autocast recommends. bfloat16 keeps float32's exponent range, so no loss
// scaling is needed (unlike float16).
#pragma once

#include <c10/core/DeviceType.h>

#include <string>

namespace batchlab::train {

struct MixedPrecision {
  bool bf16 = false;
  c10::DeviceType device = c10::DeviceType::CPU;  // the training device's type
};

// From train.precision ("fp32" | "bf16") and the training device's type.
MixedPrecision mixed_precision(const std::string& precision, c10::DeviceType device);

// Enables bf16 autocast for `device` in its scope (a no-op when `mp.bf16` is false) and restores
// the previous state on exit, clearing the autocast cast cache when the outermost guard ends.
class AutocastGuard {
 public:
  explicit AutocastGuard(const MixedPrecision& mp);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  MixedPrecision mp_;
  bool was_enabled_ = false;
  c10::ScalarType old_dtype_ = c10::ScalarType::Float;
};

}  // namespace batchlab::train
