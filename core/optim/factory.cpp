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
#include "core/optim/lion.h"
#include "core/optim/muon.h"
#include "core/optim/schedule_free_adamw.h"

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
  if (n == "muon") {
    const auto& k = c.ns_coefficients;
    return std::make_unique<MuonOptions>(MuonOptions(lr)
                                             .weight_decay(weight_decay)
                                             .orthogonalize(adapt)
                                             .momentum(c.momentum)
                                             .nesterov(c.nesterov)
                                             .ns_coefficients(std::make_tuple(k[0], k[1], k[2]))
                                             .ns_steps(c.ns_steps)
                                             .ns_dtype(c.ns_dtype)
                                             .adjust_lr(c.muon_adjust_lr)
                                             .betas(betas)
                                             .eps(c.eps)
                                             .foreach (c.implementation != "per_tensor"));
  }
  if (n == "schedulefree_adamw") {
    return std::make_unique<ScheduleFreeAdamWOptions>(
        ScheduleFreeAdamWOptions(lr)
            .betas(betas)
            .eps(c.eps)
            .weight_decay(weight_decay)
            .r(c.poly_power)
            .weight_lr_power(c.weight_lr_power)
            .foreach (c.implementation != "per_tensor"));
  }
  if (n == "lion") {
    return std::make_unique<LionOptions>(LionOptions(lr)
                                             .betas(betas)
                                             .weight_decay(weight_decay)
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

TrainingOptimizer::EvalWeights::EvalWeights(SwapsEvalWeights* swaps)
    : swaps_(swaps != nullptr && !swaps->holds_eval_weights() ? swaps : nullptr) {
  if (swaps_ != nullptr) swaps_->eval_weights();
}

TrainingOptimizer::EvalWeights::~EvalWeights() {
  if (swaps_ != nullptr) swaps_->train_weights();
}

void TrainingOptimizer::train_weights() {
  if (roles_.eval_weights != nullptr) roles_.eval_weights->train_weights();
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

namespace {

// The optimizer's groups and the wrapper's description of them, in the same order.
struct BuiltGroups {
  std::vector<torch::optim::OptimizerParamGroup> torch_groups;
  std::vector<TrainingOptimizer::Group> groups;
};

// One optimizer group per rule; for muon up to two: the rule's 2-D parameters (Muon, when the
// rule adapts) and the rest (AdamW, "<rule> (adamw)").
BuiltGroups build_groups(const config::OptimConfig& optim,
                         const std::vector<NamedParameter>& params, double peak_lr) {
  const bool layerwise = optim.name == "lars" || optim.name == "lamb" || optim.name == "muon";
  BuiltGroups out;
  auto add = [&](const ParamGroupSpec& spec, const std::vector<size_t>& members, bool adapt,
                 std::string rule) {
    if (members.empty()) return;
    std::vector<at::Tensor> tensors;
    TrainingOptimizer::Group g;
    g.rule = std::move(rule);
    g.weight_decay = spec.weight_decay;
    g.adapt = layerwise && adapt;
    g.lr_scale = spec.lr_scale;
    for (size_t i : members) {
      tensors.push_back(params[i].tensor);
      g.names.push_back(params[i].name);
    }
    out.torch_groups.emplace_back(std::move(tensors), group_options(optim, peak_lr * spec.lr_scale,
                                                                    spec.weight_decay, adapt));
    out.groups.push_back(std::move(g));
  };
  for (const ParamGroupSpec& spec : assign_param_groups(optim, params)) {
    if (optim.name != "muon") {
      add(spec, spec.members, spec.adapt, spec.rule);
      continue;
    }
    std::vector<size_t> matrices;
    std::vector<size_t> others;
    for (size_t i : spec.members) {
      (spec.adapt && params[i].tensor.dim() == 2 ? matrices : others).push_back(i);
    }
    add(spec, matrices, true, spec.rule);
    add(spec, others, false, matrices.empty() ? spec.rule : spec.rule + " (adamw)");
  }
  return out;
}

// The optimizer named by optim.name over `groups`, and the roles it plays beyond the base class.
std::unique_ptr<torch::optim::Optimizer> construct(
    const config::OptimConfig& optim, std::vector<torch::optim::OptimizerParamGroup> groups,
    double peak_lr, TrainingOptimizer::Roles& roles) {
  const std::string& n = optim.name;
  if (n == "sgd" || n == "nesterov") {
    return std::make_unique<torch::optim::SGD>(
        std::move(groups), defaults_of<torch::optim::SGDOptions>(optim, peak_lr));
  }
  if (n == "adam") {
    return std::make_unique<torch::optim::Adam>(
        std::move(groups), defaults_of<torch::optim::AdamOptions>(optim, peak_lr));
  }
  if (n == "adamw") {
    return std::make_unique<torch::optim::AdamW>(
        std::move(groups), defaults_of<torch::optim::AdamWOptions>(optim, peak_lr));
  }
  if (n == "lars") {
    auto lars = std::make_unique<Lars>(std::move(groups), defaults_of<LarsOptions>(optim, peak_lr));
    roles.trust_ratios = lars.get();
    return lars;
  }
  if (n == "muon") {
    return std::make_unique<Muon>(std::move(groups), defaults_of<MuonOptions>(optim, peak_lr));
  }
  if (n == "schedulefree_adamw") {
    auto sf = std::make_unique<ScheduleFreeAdamW>(
        std::move(groups), defaults_of<ScheduleFreeAdamWOptions>(optim, peak_lr));
    roles.eval_weights = sf.get();
    return sf;
  }
  if (n == "lion") {
    return std::make_unique<Lion>(std::move(groups), defaults_of<LionOptions>(optim, peak_lr));
  }
  auto lamb = std::make_unique<Lamb>(std::move(groups), defaults_of<LambOptions>(optim, peak_lr));
  roles.trust_ratios = lamb.get();
  roles.clips_itself = lamb.get();
  return lamb;
}

}  // namespace

void TrainingOptimizer::reconfigure(const config::OptimConfig& optim,
                                    const std::vector<NamedParameter>& params) {
  config::expect_valid(optim, "TrainingOptimizer::reconfigure");
  config::expect(optim.name == name_, "TrainingOptimizer::reconfigure",
                 fmt::format("optim.name = {} for a {} optimizer", optim.name, name_));
  const BuiltGroups built = build_groups(optim, params, lr_);
  // Checks that the groups hold the same parameters, in order, then replaces their options.
  keep_group_options(*optimizer_, built.torch_groups);
  for (size_t i = 0; i < groups_.size(); ++i)
    groups_[i].weight_decay = built.groups[i].weight_decay;
  set_lr(lr_);
}

std::unique_ptr<TrainingOptimizer> make_optimizer(const config::OptimConfig& optim,
                                                  const std::vector<NamedParameter>& params,
                                                  double peak_lr) {
  // Preconditions, not user-input checks: the schema validated the section (core/config).
  config::expect_valid(optim, "make_optimizer");
  config::expect(std::isfinite(peak_lr) && peak_lr > 0.0, "make_optimizer",
                 fmt::format("peak_lr = {} must be finite and > 0", peak_lr));
  BuiltGroups built = build_groups(optim, params, peak_lr);
  // Copies (options cloned): the constructors take the groups by value.
  const std::vector<torch::optim::OptimizerParamGroup> intended = built.torch_groups;
  TrainingOptimizer::Roles roles;
  std::unique_ptr<torch::optim::Optimizer> opt =
      construct(optim, std::move(built.torch_groups), peak_lr, roles);
  keep_group_options(*opt, intended);

  std::vector<at::Tensor> in_order;
  in_order.reserve(params.size());
  for (const NamedParameter& p : params) in_order.push_back(p.tensor);
  const bool trust = optim.name == "lars" || optim.name == "lamb";
  auto out = std::make_unique<TrainingOptimizer>(
      optim.name, std::move(opt), std::move(built.groups), std::move(in_order), optim.grad_clip,
      roles, !trust || optim.implementation == "auto");
  out->set_lr(peak_lr);
  return out;
}

}  // namespace batchlab::optim
