// The key of a parameter's entry in torch::optim::Optimizer::state_, for optimizers written
// against LibTorch's Optimizer base class (Lars, Lamb).
//
// LibTorch 2.2 changed the map from ska::flat_hash_map<std::string, ...> keyed by
// c10::guts::to_string(p.unsafeGetTensorImpl()) to ska::flat_hash_map<void*, ...> keyed by
// p.unsafeGetTensorImpl() and removed c10::guts::to_string (pytorch/pytorch#108480, "Eliminate
// c10::guts::to_string", merged for 2.2). Both keys name the parameter's TensorImpl; only the
// type differs. (LibTorch's serialize() writes the key as text, "0x..." from 1.13 and decimal from
// 2.2, and 2.x reads it back with std::stoull: optimizer state saved by a 1.13 build does not load
// into a 2.x build; docs/gpu.md.)
#pragma once

#include <ATen/core/Tensor.h>

#include "core/torch_version.h"

#if !BATCHLAB_TORCH_AT_LEAST(2, 2)
#include <c10/util/string_utils.h>

#include <string>
#endif

namespace batchlab::optim {

#if BATCHLAB_TORCH_AT_LEAST(2, 2)
inline void* state_key(const at::Tensor& param) { return param.unsafeGetTensorImpl(); }
#else
inline std::string state_key(const at::Tensor& param) {
  return c10::guts::to_string(param.unsafeGetTensorImpl());
}
#endif

}  // namespace batchlab::optim
