#include "core/train/autocast.h"

#include <ATen/autocast_mode.h>

#include "core/torch_version.h"

namespace batchlab::train {

namespace {

// LibTorch 2.4 replaced the per-device functions (set_enabled for CUDA, set_cpu_enabled, ...) by
// ones taking the device type and deprecated the old ones (pytorch/pytorch#124359, "Refactor
// autocast C++ APIs to be device-agnostic"; C10_DEPRECATED, so an error under -Werror); 1.13 has
// only the old ones.
#if BATCHLAB_TORCH_AT_LEAST(2, 4)
bool is_enabled(c10::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
void set_enabled(c10::DeviceType d, bool on) { at::autocast::set_autocast_enabled(d, on); }
c10::ScalarType get_dtype(c10::DeviceType d) { return at::autocast::get_autocast_dtype(d); }
void set_dtype(c10::DeviceType d, c10::ScalarType t) { at::autocast::set_autocast_dtype(d, t); }
#else
bool is_enabled(c10::DeviceType d) {
  return d == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_enabled(c10::DeviceType d, bool on) {
  if (d == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}
c10::ScalarType get_dtype(c10::DeviceType d) {
  return d == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                    : at::autocast::get_autocast_cpu_dtype();
}
void set_dtype(c10::DeviceType d, c10::ScalarType t) {
  if (d == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(t);
  } else {
    at::autocast::set_autocast_cpu_dtype(t);
  }
}
#endif

}  // namespace

MixedPrecision mixed_precision(const std::string& precision, c10::DeviceType device) {
  MixedPrecision mp;
  mp.bf16 = precision == "bf16";
  mp.device = device;
  return mp;
}

AutocastGuard::AutocastGuard(const MixedPrecision& mp) : mp_(mp) {
  if (!mp_.bf16) return;
  was_enabled_ = is_enabled(mp_.device);
  old_dtype_ = get_dtype(mp_.device);
  set_enabled(mp_.device, true);
  set_dtype(mp_.device, c10::ScalarType::BFloat16);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!mp_.bf16) return;
  // The cache holds bf16 copies of the weights for this forward; they are stale after the update.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_enabled(mp_.device, was_enabled_);
  set_dtype(mp_.device, old_dtype_);
}

}  // namespace batchlab::train
