// Channels-last (NHWC) memory format for convolutional networks on a GPU (model.channels_last):
// cuDNN's fastest convolution kernels, and the tensor cores behind them, work on NHWC, and a
// network whose weights and inputs are both channels-last runs without layout conversions.
#pragma once

#include <torch/nn/module.h>

namespace batchlab::models {

// Converts every 4-d parameter and buffer of `module` (recursively) to
// at::MemoryFormat::ChannelsLast in place: same values, same tensor objects (the module's members
// and any optimizer created afterwards see the new layout), NHWC strides. Other tensors are left
// as they are. Call it after moving the module to its device and before creating the optimizer;
// inputs must then be converted too (`images.contiguous(at::MemoryFormat::ChannelsLast)`).
void to_channels_last(torch::nn::Module& module);

}  // namespace batchlab::models
