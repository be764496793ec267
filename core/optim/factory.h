// One optimizer factory for every optim.name, and the wrapper the trainer steps.
//
//   sgd       torch::optim::SGD, momentum (dampening 0); nesterov when optim.nesterov is set
//   nesterov  torch::optim::SGD with Nesterov momentum
//   adam      torch::optim::Adam, L2 weight decay (added to the gradient), config betas/eps
//   adamw     torch::optim::AdamW, decoupled weight decay
//   lars      batchlab::optim::Lars (lars.h)
//   lamb      batchlab::optim::Lamb (lamb.h), clips by the global norm itself (optim.grad_clip)
//   muon      batchlab::optim::Muon (muon.h): the 2-D parameters of adapted groups (`adapt` of
//             optim.groups, true unless excluded) take the Muon rule, all others AdamW, in groups
//             of their own (a rule's group splits in two: "<rule>" and "<rule> (adamw)")
//   schedulefree_adamw  batchlab::optim::ScheduleFreeAdamW (schedule_free_adamw.h): evaluations
//             and checkpoints see its averaged weights through TrainingOptimizer::EvalWeights
//   lion      batchlab::optim::Lion (lion.h)
// optim.implementation picks the step code of the optimizers batchlab implements (lars.h).
// Parameter groups come from the ordered rules of param_groups.h; every group gets its FULL options
// set explicitly (LibTorch 1.13's add_param_group copies missing options from the defaults, later
// versions changed that, so nothing is left to it). A group's LR is the scheduled LR times its
// rule's lr_scale, set through set_lr() before every step.
#pragma once

#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config/optim_config.h"
#include "core/optim/eval_weights.h"
#include "core/optim/grad_clip.h"
#include "core/optim/layerwise.h"
#include "core/optim/param_groups.h"

namespace batchlab::optim {

class TrainingOptimizer {
 public:
  struct Group {
    std::string rule;  // the winning rule as written, "default" for the rest
    double weight_decay = 0.0;
    // The layer-wise rule in effect: trust ratio (lars, lamb), orthogonalization (muon); false for
    // every other optimizer and for muon's AdamW groups.
    bool adapt = false;
    double lr_scale = 1.0;
    std::vector<std::string> names;  // parameter names, in the order given to make_optimizer
  };

  // What the concrete optimizer is beyond torch::optim::Optimizer (layerwise.h), set by
  // make_optimizer; null where it is not.
  struct Roles {
    const TrustRatioSource* trust_ratios = nullptr;  // LARS, LAMB
    ClipsByGlobalNorm* clips_itself = nullptr;       // LAMB
    SwapsEvalWeights* eval_weights = nullptr;        // Schedule-Free AdamW
  };

  // While it lives, the parameters hold the weights to evaluate and to save (Schedule-Free's x);
  // its end puts the training weights back. For every other optimizer it does nothing. The
  // trainer holds one around each evaluation and checkpoint, so it never asks which optimizer
  // it has.
  class EvalWeights {
   public:
    explicit EvalWeights(SwapsEvalWeights* swaps);
    ~EvalWeights();
    EvalWeights(const EvalWeights&) = delete;
    EvalWeights& operator=(const EvalWeights&) = delete;

   private:
    SwapsEvalWeights* swaps_;  // null: nothing to swap, or the weights were in place already
  };

  // host_grad_norm: grad_norm() of CPU gradients summed by the fused host loops (false: kept on
  // the device as on a GPU, for optim.implementation = "foreach" / "per_tensor").
  TrainingOptimizer(std::string name, std::unique_ptr<torch::optim::Optimizer> optimizer,
                    std::vector<Group> groups, std::vector<at::Tensor> params, double grad_clip,
                    Roles roles, bool host_grad_norm = true);

  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  const torch::optim::Optimizer& optimizer() const { return *optimizer_; }
  const std::string& name() const { return name_; }

  // Every group gets lr * its rule's lr_scale.
  void set_lr(double lr);
  double lr() const { return lr_; }  // the last value given to set_lr (make_optimizer: peak_lr)

  // Global L2 norm of the current gradients of the parameters it steps (a tied tensor counts once):
  // the norm step() clips by. 0-dim float64, undefined without gradients.
  GradNorm grad_norm() const;

  // The update, given `grad_norm` = grad_norm() of the current gradients (the trainer measures it
  // every step for its own records, so it is not measured twice). With grad_clip > 0 the gradients
  // are clipped by it: divided by max(norm / grad_clip, 1) in place, or, for an optimizer that
  // clips inside its own update (LAMB, as timm's), left unchanged.
  void step(const GradNorm& grad_norm);
  // The same for callers without the norm: measured here when clipping needs it.
  void step();
  // Releases the gradients instead of zeroing them (PyTorch's set_to_none, the default of
  // torch.optim since 2.0 and of LibTorch 2.x, not of LibTorch 1.13): the next backward writes
  // fresh buffers rather than adding into zeroed ones, and nothing fills them with zeros first.
  void zero_grad();

  const std::vector<Group>& groups() const { return groups_; }

  // Every group's options rebuilt from `optim` (the same optimizer and parameter-group rules,
  // other values: a batch schedule's phase re-resolves beta2 and the weight decay by the batch,
  // config/batch_rules.h), the optimizer's state (moments, step counts) kept and the LR as last
  // set. `params` are the ones given to make_optimizer.
  void reconfigure(const config::OptimConfig& optim, const std::vector<NamedParameter>& params);

  // The evaluation weights until the returned guard ends (EvalWeights).
  [[nodiscard]] EvalWeights eval_weights() { return EvalWeights(roles_.eval_weights); }
  // Puts the training weights in place if the parameters hold the evaluation weights: after
  // loading a checkpoint, which was saved with the evaluation weights. A no-op otherwise.
  void train_weights();

  // Trust ratio applied to each parameter in the last step, in the order of the NamedParameters
  // given to make_optimizer: 0-dim float64 tensors (copies), undefined for optimizers without trust
  // ratios, parameters not adapted, and parameters not stepped yet. On the CPU (free to read) after
  // the fused and multi-tensor steps; after per-tensor steps on the device, where stacking them
  // and reading once is one sync (core/train/layer_stats.cpp does).
  std::vector<at::Tensor> last_trust_ratios() const;

 private:
  std::string name_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<Group> groups_;
  std::vector<at::Tensor> params_;   // in make_optimizer's order (ties included)
  std::vector<at::Tensor> stepped_;  // every group's parameters: each tensor once
  double grad_clip_ = 0.0;
  Roles roles_;
  bool host_grad_norm_ = true;
  double lr_ = 0.0;
};

// Builds the optimizer named by optim.name over `params`, with every group's LR at
// peak_lr * lr_scale. `optim` must have passed config validation and peak_lr be > 0 (asserted: an
// internal batchlab::Error otherwise, config/preconditions.h); ConfigError for a group rule that
// matches no parameter (only the model's names can tell).
std::unique_ptr<TrainingOptimizer> make_optimizer(const config::OptimConfig& optim,
                                                  const std::vector<NamedParameter>& params,
                                                  double peak_lr);

}  // namespace batchlab::optim
