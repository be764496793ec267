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
  // The layer-wise rule (LARS/LAMB: trust ratio; Muon: orthogonalization, 2-D parameters only, the
  // rest of the group goes to Muon's AdamW); unset: true.
  std::optional<bool> adapt;
  double lr_scale = 1.0;
};

struct OptimConfig {
  // sgd | nesterov | adam | adamw | lars | lamb | muon | schedulefree_adamw | lion
  std::string name = "sgd";
  double base_lr = 0.1;
  int64_t base_batch = 256;
  std::string scaling = "none";  // none | linear | sqrt
  double momentum = 0.9;  // resolved: 0.95 for muon when absent (torch.optim.Muon's), else 0.9
  // SGD, LARS, Muon; optimizer `nesterov` implies it. Resolved: true for muon when absent
  // (torch's).
  bool nesterov = false;
  // Adam-family and Lion; muon's AdamW group. Resolved: (0.9, 0.99) for lion (lion-pytorch's)
  // when absent, else (0.9, 0.999).
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;  // resolved: 1e-6 for lamb when absent, 1e-8 otherwise
  // Resolved: base_weight_decay * batch.global / base_batch when weight_decay_scaling = "linear"
  // (batch_rules.h), else as given (default 0).
  double weight_decay = 0.0;
  std::string weight_decay_scaling = "none";  // none | linear
  double base_weight_decay = 0.0;             // the decay at base_batch (weight_decay_scaling)
  // beta2 from a half-life in examples, floored (batch_rules.h); 0 = off (betas[1] as given).
  double beta2_half_life = 0.0;
  double beta2_floor = 0.9;
  double trust_coefficient = 0.001;
  bool trust_clip = false;
  bool always_adapt = false;
  bool lr_in_momentum = false;  // LARS: LR inside the momentum buffer (paper, MLPerf) or outside
  // LARS/LAMB step code (core/optim/lars.h, lamb.h): "auto" = fused loops on CPU tensors, ATen's
  // multi-tensor ops elsewhere; "foreach" = the multi-tensor ops on every device (what a GPU runs,
  // on the CPU too); "per_tensor" = one op sequence per tensor (the reference). Same arithmetic.
  // Muon, Schedule-Free AdamW and Lion have no fused loops: "auto" and "foreach" are their
  // multi-tensor path. Not accepted for LibTorch's own optimizers.
  std::string implementation = "auto";
  // Muon (core/optim/muon.h, newton_schulz.h): Newton-Schulz steps, coefficients (a, b, c) and the
  // dtype of the iteration ("bf16" as torch.optim.Muon, or "fp32"); the rate factor of a
  // [rows, cols] matrix: "original" sqrt(max(1, rows/cols)), "match_rms_adamw" 0.2
  // sqrt(max(rows, cols)), "spectral_unclamped" sqrt(rows/cols).
  int64_t ns_steps = 5;
  std::vector<double> ns_coefficients = {3.4445, -4.7750, 2.0315};
  std::string ns_dtype = "bf16";
  std::string muon_adjust_lr = "original";
  // Schedule-Free AdamW (core/optim/schedule_free_adamw.h): the average weighs step k's iterate by
  // (k+1)^poly_power * lr_max^weight_lr_power (the package's r and weight_lr_power).
  double poly_power = 0.0;
  double weight_lr_power = 2.0;
  bool bias_correction = true;  // LAMB/Adam
  bool grad_averaging = true;   // LAMB
  double grad_clip = 0.0;  // global-norm clipping; resolved: 1.0 for lamb when absent, else 0 (off)
  // Parameters kept out of weight decay and trust-ratio adaptation (unless always_adapt).
  std::vector<std::string> exclude = {"ndim<2"};
  std::vector<ParamGroupRule> groups;  // [[optim.groups]], applied before `exclude`
};

}  // namespace batchlab::config
