#include "core/optim/factory.h"

#include <fmt/format.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <unordered_set>
#include <utility>

#include "core/config/preconditions.h"
#include "core/errors.h"
#include "core/optim/grad_clip.h"
#include "core/optim/group_options.h"
#include "core/optim/lamb.h"
#include "core/optim/lars.h"

namespace batchlab::optim {
namespace {

// Full options of one group: every field set from the config, none left to LibTorch's defaults.
std::unique_ptr<torch::optim::OptimizerOptions> group_options(const config::OptimConfig& c,
                                                              double lr, double weight_decay,
                                                              bool adapt) {
  const std::string& n = c.name;
  const auto betas = std::make_tuple(c.betas[0], c.betas[1]);
  if (n == "sgd" || n == "nesterov") {
    return std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(lr)
                                                          .momentum(c.momentum)
                                                          .dampening(0.0)
                                                          .weight_decay(weight_decay)
                                                          .nesterov(n == "nesterov" || c.nesterov));
  }
  if (n == "adam") {
    return std::make_unique<torch::optim::AdamOptions>(torch::optim::AdamOptions(lr)
                                                           .betas(betas)
                                                           .eps(c.eps)
                                                           .weight_decay(weight_decay)
                                                           .amsgrad(false));
  }
  if (n == "adamw") {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(lr)
                                                            .betas(betas)
                                                            .eps(c.eps)
                                                            .weight_decay(weight_decay)
                                                            .amsgrad(false));
  }
  if (n == "lars") {
    return std::make_unique<LarsOptions>(LarsOptions(lr)
                                             .momentum(c.momentum)
                                             .weight_decay(weight_decay)
                                             .nesterov(c.nesterov)
                                             .trust_coefficient(c.trust_coefficient)
                                             .eps(c.eps)
                                             .trust_clip(c.trust_clip)
                                             .always_adapt(c.always_adapt)
                                             .adapt(adapt)
                                             .lr_in_momentum(c.lr_in_momentum)
                                             .fused(c.implementation == "auto")
                                             .foreach (c.implementation != "per_tensor"));
  }
  return std::make_unique<LambOptions>(LambOptions(lr)
                                           .betas(betas)
                                           .eps(c.eps)
                                           .weight_decay(weight_decay)
                                           .bias_correction(c.bias_correction)
                                           .grad_averaging(c.grad_averaging)
                                           .max_grad_norm(c.grad_clip)
                                           .trust_clip(c.trust_clip)
                                           .always_adapt(c.always_adapt)
                                           .adapt(adapt)
                                           .fused(c.implementation == "auto")
                                           .foreach (c.implementation != "per_tensor"));
}

template <class Options>
Options defaults_of(const config::OptimConfig& c, double lr) {
  return static_cast<const Options&>(*group_options(c, lr, c.weight_decay, true));
}

}  // namespace

TrainingOptimizer::TrainingOptimizer(std::string name,
                                     std::unique_ptr<torch::optim::Optimizer> optimizer,
                                     std::vector<Group> groups, std::vector<at::Tensor> params,
                                     double grad_clip, Roles roles, bool host_grad_norm)
    : name_(std::move(name)),
      optimizer_(std::move(optimizer)),
      groups_(std::move(groups)),
      params_(std::move(params)),
      grad_clip_(grad_clip),
      roles_(roles),
      host_grad_norm_(host_grad_norm) {
  for (const auto& group : optimizer_->param_groups()) {
    stepped_.insert(stepped_.end(), group.params().begin(), group.params().end());
  }
}

void TrainingOptimizer::set_lr(double lr) {
  auto& pg = optimizer_->param_groups();
  for (size_t i = 0; i < pg.size() && i < groups_.size(); ++i) {
    pg[i].options().set_lr(lr * groups_[i].lr_scale);
  }
  lr_ = lr;
}

void TrainingOptimizer::step(const GradNorm& grad_norm) {
  if (roles_.clips_itself != nullptr) {
    roles_.clips_itself->step_with_grad_norm(grad_norm);
    return;
  }
  if (grad_clip_ > 0.0) clip_grad_norm(stepped_, grad_clip_, grad_norm);
  optimizer_->step();
}

void TrainingOptimizer::step() { step(grad_clip_ > 0.0 ? grad_norm() : GradNorm{}); }

void TrainingOptimizer::zero_grad() {
  for (auto& group : optimizer_->param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) p.mutable_grad().reset();
    }
  }
}

GradNorm TrainingOptimizer::grad_norm() const {
  return global_grad_norm(stepped_, host_grad_norm_);
}

std::vector<at::Tensor> TrainingOptimizer::last_trust_ratios() const {
  std::vector<at::Tensor> out(params_.size());
  if (roles_.trust_ratios == nullptr) return out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor ratio = roles_.trust_ratios->trust_ratio(params_[i]);
    if (ratio.defined()) out[i] = ratio.clone();
  }
  return out;
}

std::unique_ptr<TrainingOptimizer> make_optimizer(const config::OptimConfig& optim,
                                                  const std::vector<NamedParameter>& params,
                                                  double peak_lr) {
  // Preconditions, not user-input checks: the schema validated the section (core/config).
  config::expect_valid(optim, "make_optimizer");
  config::expect(std::isfinite(peak_lr) && peak_lr > 0.0, "make_optimizer",
                 fmt::format("peak_lr = {} must be finite and > 0", peak_lr));
  const std::vector<ParamGroupSpec> specs = assign_param_groups(optim, params);
  const bool trust = optim.name == "lars" || optim.name == "lamb";

  std::vector<torch::optim::OptimizerParamGroup> torch_groups;
  std::vector<TrainingOptimizer::Group> groups;
  for (const ParamGroupSpec& spec : specs) {
    std::vector<at::Tensor> tensors;
    TrainingOptimizer::Group g;
    g.rule = spec.rule;
    g.weight_decay = spec.weight_decay;
    g.adapt = trust && spec.adapt;
    g.lr_scale = spec.lr_scale;
    for (size_t i : spec.members) {
      tensors.push_back(params[i].tensor);
      g.names.push_back(params[i].name);
    }
    torch_groups.emplace_back(std::move(tensors), group_options(optim, peak_lr * spec.lr_scale,
                                                                spec.weight_decay, spec.adapt));
    groups.push_back(std::move(g));
  }

  // Copies (options cloned): the constructors below take the groups by value.
  const std::vector<torch::optim::OptimizerParamGroup> intended = torch_groups;
  std::unique_ptr<torch::optim::Optimizer> opt;
  TrainingOptimizer::Roles roles;
  const std::string& n = optim.name;
  if (n == "sgd" || n == "nesterov") {
    opt = std::make_unique<torch::optim::SGD>(
        std::move(torch_groups), defaults_of<torch::optim::SGDOptions>(optim, peak_lr));
  } else if (n == "adam") {
    opt = std::make_unique<torch::optim::Adam>(
        std::move(torch_groups), defaults_of<torch::optim::AdamOptions>(optim, peak_lr));
  } else if (n == "adamw") {
    opt = std::make_unique<torch::optim::AdamW>(
        std::move(torch_groups), defaults_of<torch::optim::AdamWOptions>(optim, peak_lr));
  } else if (n == "lars") {
    auto lars =
        std::make_unique<Lars>(std::move(torch_groups), defaults_of<LarsOptions>(optim, peak_lr));
    roles.trust_ratios = lars.get();
    opt = std::move(lars);
  } else {
    auto lamb =
        std::make_unique<Lamb>(std::move(torch_groups), defaults_of<LambOptions>(optim, peak_lr));
    roles.trust_ratios = lamb.get();
    roles.clips_itself = lamb.get();
    opt = std::move(lamb);
  }
  keep_group_options(*opt, intended);

  std::vector<at::Tensor> in_order;
  in_order.reserve(params.size());
  for (const NamedParameter& p : params) in_order.push_back(p.tensor);
  auto out = std::make_unique<TrainingOptimizer>(n, std::move(opt), std::move(groups),
                                                 std::move(in_order), optim.grad_clip, roles,
                                                 !trust || optim.implementation == "auto");
  out->set_lr(peak_lr);
  return out;
}

}  // namespace batchlab::optim
