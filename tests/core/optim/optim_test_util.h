// Shared by the optimizer tests.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace batchlab::optim::test_util {

// A float64 parameter holding `values`, with requires_grad set: exact arithmetic in the by-hand
// checks.
inline torch::Tensor leaf(std::vector<double> values) {
  return torch::tensor(values, torch::kFloat64).set_requires_grad(true);
}

}  // namespace batchlab::optim::test_util
