#include "models/ghost_batch_norm.h"

#include <fmt/format.h>
#include <torch/nn/functional/batchnorm.h>
#include <torch/torch.h>

#include "core/errors.h"

namespace batchlab::models {

GhostBatchNorm2dImpl::GhostBatchNorm2dImpl(GhostBatchNormOptions options_) : options(options_) {
  reset();
}

void GhostBatchNorm2dImpl::reset() {
  const int64_t c = options.num_features;
  weight = register_parameter("weight", torch::ones({c}));
  bias = register_parameter("bias", torch::zeros({c}));
  running_mean = register_buffer("running_mean", torch::zeros({c}));
  running_var = register_buffer("running_var", torch::ones({c}));
  num_batches_tracked = register_buffer("num_batches_tracked", torch::zeros({}, torch::kInt64));
}

torch::Tensor GhostBatchNorm2dImpl::forward(const torch::Tensor& x) {
  namespace F = torch::nn::functional;
  const int64_t n = x.size(0);
  const int64_t g = options.group;
  if (!is_training() || g <= 0 || n <= g) {
    if (is_training()) num_batches_tracked.add_(1);
    return F::batch_norm(x, running_mean, running_var,
                         F::BatchNormFuncOptions()
                             .weight(weight)
                             .bias(bias)
                             .training(is_training())
                             .momentum(options.momentum)
                             .eps(options.eps));
  }
  if (n % g != 0) {
    throw InputError(fmt::format(
        "batch.bn_group = {} does not divide the micro-batch of {} samples; choose a bn_group that "
        "divides batch.micro",
        g, n));
  }
  const int64_t groups = n / g;
  const int64_t c = x.size(1);
  // [groups, g, C, H, W]: statistics per group over (samples, H, W).
  auto xg = x.view({groups, g, c, x.size(2), x.size(3)});
  auto mean = xg.mean({1, 3, 4}, /*keepdim=*/true);                 // [groups, 1, C, 1, 1]
  auto var = (xg - mean).pow(2).mean({1, 3, 4}, /*keepdim=*/true);  // biased, as BN uses
  auto y = (xg - mean) * torch::rsqrt(var + options.eps);
  y = y * weight.view({1, 1, c, 1, 1}) + bias.view({1, 1, c, 1, 1});

  {
    torch::NoGradGuard no_grad;
    // Sequential momentum updates, one per group, as separate forward passes would make.
    const double m = options.momentum;
    const double count = static_cast<double>(g * x.size(2) * x.size(3));
    auto group_mean = mean.view({groups, c}).detach();
    auto group_var = var.view({groups, c}).detach() * (count / std::max(count - 1.0, 1.0));
    for (int64_t i = 0; i < groups; ++i) {
      running_mean.mul_(1.0 - m).add_(group_mean[i], m);
      running_var.mul_(1.0 - m).add_(group_var[i], m);
    }
    num_batches_tracked.add_(groups);
  }
  return y.view_as(x);
}

}  // namespace batchlab::models
