#include "core/optim/factory.h"

#include <fmt/format.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <unordered_set>
#include <utility>

#include "core/errors.h"
#include "core/optim/grad_clip.h"
#include "core/optim/lamb.h"
#include "core/optim/lars.h"

namespace batchlab::optim {
namespace {

Diagnostic problem(const std::string& key, const std::string& value, const std::string& rule) {
  return Diagnostic{"", 0, 0, key, value, rule};
}

std::string num(double x) { return fmt::format("{}", x); }

// The hyper-parameters each optimizer reads, checked before anything is allocated.
void validate(const config::OptimConfig& c, double peak_lr) {
  std::vector<Diagnostic> problems;
  const std::string& n = c.name;
  const bool known =
      n == "sgd" || n == "nesterov" || n == "adam" || n == "adamw" || n == "lars" || n == "lamb";
  if (!known) {
    problems.push_back(
        problem("optim.name", n, "must be one of sgd, nesterov, adam, adamw, lars, lamb"));
  }
  if (!(peak_lr >= 0.0)) problems.push_back(problem("optim.base_lr", num(peak_lr), "must be >= 0"));
  if (!(c.weight_decay >= 0.0)) {
    problems.push_back(problem("optim.weight_decay", num(c.weight_decay), "must be >= 0"));
  }
  for (size_t i = 0; i < c.groups.size(); ++i) {
    const auto& wd = c.groups[i].weight_decay;
    if (wd && !(*wd >= 0.0)) {
      problems.push_back(
          problem(fmt::format("optim.groups[{}].weight_decay", i), num(*wd), "must be >= 0"));
    }
    if (!(c.groups[i].lr_scale >= 0.0)) {
      problems.push_back(problem(fmt::format("optim.groups[{}].lr_scale", i),
                                 num(c.groups[i].lr_scale), "must be >= 0"));
    }
  }
  if (!(c.grad_clip >= 0.0)) {
    problems.push_back(problem("optim.grad_clip", num(c.grad_clip), "must be >= 0 (0 is off)"));
  }
  const bool sgd_like = n == "sgd" || n == "nesterov" || n == "lars";
  if (sgd_like && !(c.momentum >= 0.0)) {
    problems.push_back(problem("optim.momentum", num(c.momentum), "must be >= 0"));
  }
  const bool nesterov = n == "nesterov" || (c.nesterov && (n == "sgd" || n == "lars"));
  if (nesterov && !(c.momentum > 0.0)) {
    problems.push_back(problem("optim.momentum", num(c.momentum), "Nesterov momentum needs > 0"));
  }
  if (n == "adam" || n == "adamw" || n == "lamb") {
    for (int i = 0; i < 2; ++i) {
      if (!(c.betas[i] >= 0.0 && c.betas[i] < 1.0)) {
        problems.push_back(
            problem(fmt::format("optim.betas[{}]", i), num(c.betas[i]), "must be in [0, 1)"));
      }
    }
  }
  if (!(c.eps >= 0.0)) problems.push_back(problem("optim.eps", num(c.eps), "must be >= 0"));
  if (n == "lars" && !(c.trust_coefficient > 0.0)) {
    problems.push_back(problem("optim.trust_coefficient", num(c.trust_coefficient), "must be > 0"));
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));
}

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
                                             .lr_in_momentum(c.lr_in_momentum));
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
                                           .adapt(adapt));
}

template <class Options>
Options defaults_of(const config::OptimConfig& c, double lr) {
  return static_cast<const Options&>(*group_options(c, lr, c.weight_decay, true));
}

}  // namespace

TrainingOptimizer::TrainingOptimizer(std::string name,
                                     std::unique_ptr<torch::optim::Optimizer> optimizer,
                                     std::vector<Group> groups, std::vector<at::Tensor> params,
                                     double grad_clip)
    : name_(std::move(name)),
      optimizer_(std::move(optimizer)),
      groups_(std::move(groups)),
      params_(std::move(params)),
      grad_clip_(grad_clip) {}

void TrainingOptimizer::set_lr(double lr) {
  auto& pg = optimizer_->param_groups();
  for (size_t i = 0; i < pg.size() && i < groups_.size(); ++i) {
    pg[i].options().set_lr(lr * groups_[i].lr_scale);
  }
  lr_ = lr;
}

void TrainingOptimizer::step() {
  if (auto* lamb = dynamic_cast<Lamb*>(optimizer_.get())) {
    lamb->step();
    last_grad_norm_ = lamb->last_grad_norm();
    return;
  }
  last_grad_norm_ = at::Tensor();
  if (grad_clip_ > 0.0) {
    std::vector<at::Tensor> all;
    for (const auto& group : optimizer_->param_groups()) {
      all.insert(all.end(), group.params().begin(), group.params().end());
    }
    last_grad_norm_ = clip_grad_norm(all, grad_clip_).norm;
  }
  optimizer_->step();
}

std::vector<at::Tensor> TrainingOptimizer::last_trust_ratios() const {
  std::vector<at::Tensor> out(params_.size());
  const auto* lars = dynamic_cast<const Lars*>(optimizer_.get());
  const auto* lamb = dynamic_cast<const Lamb*>(optimizer_.get());
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor ratio;
    if (lars != nullptr) {
      if (const LarsParamState* st = lars->param_state(params_[i])) ratio = st->trust_ratio();
    } else if (lamb != nullptr) {
      if (const LambParamState* st = lamb->param_state(params_[i])) ratio = st->trust_ratio();
    }
    if (ratio.defined()) out[i] = ratio.clone();
  }
  return out;
}

at::Tensor TrainingOptimizer::last_grad_norm() const { return last_grad_norm_; }

std::unique_ptr<TrainingOptimizer> make_optimizer(const config::OptimConfig& optim,
                                                  const std::vector<NamedParameter>& params,
                                                  double peak_lr) {
  validate(optim, peak_lr);
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

  std::unique_ptr<torch::optim::Optimizer> opt;
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
    opt = std::make_unique<Lars>(std::move(torch_groups), defaults_of<LarsOptions>(optim, peak_lr));
  } else {
    opt = std::make_unique<Lamb>(std::move(torch_groups), defaults_of<LambOptions>(optim, peak_lr));
  }

  std::vector<at::Tensor> in_order;
  in_order.reserve(params.size());
  for (const NamedParameter& p : params) in_order.push_back(p.tensor);
  auto out = std::make_unique<TrainingOptimizer>(n, std::move(opt), std::move(groups),
                                                 std::move(in_order), optim.grad_clip);
  out->set_lr(peak_lr);
  return out;
}

}  // namespace batchlab::optim
