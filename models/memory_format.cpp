#include "models/memory_format.h"

#include <torch/types.h>

namespace batchlab::models {
namespace {

void convert(torch::Tensor& t) {
  if (!t.defined() || t.dim() != 4) return;
  // set_data swaps the storage behind the same TensorImpl, so every holder of this tensor (the
  // module's member, its parameter or buffer list) sees the new layout.
  t.set_data(t.detach().contiguous(at::MemoryFormat::ChannelsLast));
}

}  // namespace

void to_channels_last(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters(/*recurse=*/true)) convert(p);
  for (auto& b : module.buffers(/*recurse=*/true)) convert(b);
}

}  // namespace batchlab::models
