// [optim]: the optimizer and its parameter groups (experiment_config.h describes the config
// structs as a whole).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::config {

// One ordered parameter-group rule; the first rule whose pattern matches a parameter's name wins.
// Pattern: a glob over the parameter name (`*`, `?`), or `ndim<2` for every parameter with fewer
// than two dimensions (biases and normalization scales/shifts).
struct ParamGroupRule {
  std::string match;
  std::optional<double> weight_decay;  // unset: optim.weight_decay
  std::optional<bool> adapt;           // trust-ratio adaptation (LARS/LAMB); unset: true
  double lr_scale = 1.0;
};

struct OptimConfig {
  std::string name = "sgd";  // sgd | nesterov | adam | adamw | lars | lamb
  double base_lr = 0.1;
  int64_t base_batch = 256;
  std::string scaling = "none";  // none | linear | sqrt
  double momentum = 0.9;
  bool nesterov = false;  // LARS; optimizer `nesterov` implies it
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;  // resolved: 1e-6 for lamb when absent, 1e-8 otherwise
  double weight_decay = 0.0;
  double trust_coefficient = 0.001;
  bool trust_clip = false;
  bool always_adapt = false;
  bool lr_in_momentum = false;  // LARS: LR inside the momentum buffer (paper, MLPerf) or outside
  // LARS/LAMB step code (core/optim/lars.h, lamb.h): "auto" = fused loops on CPU tensors, ATen's
  // multi-tensor ops elsewhere; "foreach" = the multi-tensor ops on every device (what a GPU runs,
  // on the CPU too); "per_tensor" = one op sequence per tensor (the reference). Same arithmetic.
  // Ignored by the other optimizers (LibTorch's own).
  std::string implementation = "auto";
  bool bias_correction = true;  // LAMB/Adam
  bool grad_averaging = true;   // LAMB
  double grad_clip = 0.0;  // global-norm clipping; resolved: 1.0 for lamb when absent, else 0 (off)
  // Parameters kept out of weight decay and trust-ratio adaptation (unless always_adapt).
  std::vector<std::string> exclude = {"ndim<2"};
  std::vector<ParamGroupRule> groups;  // [[optim.groups]], applied before `exclude`
};

}  // namespace batchlab::config
