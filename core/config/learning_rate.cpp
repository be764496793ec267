#include "core/config/learning_rate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/config/canonical.h"
#include "core/config/limits.h"
#include "core/config/validation.h"

namespace batchlab::config {
namespace {

Diagnostic lr_problem(std::string key, std::string value, std::string rule) {
  Diagnostic d;
  d.key = std::move(key);
  d.value = std::move(value);
  d.rule = std::move(rule);
  return d;
}

// "1e+38 x 64 (linear: batch.global 64 / optim.base_batch 1) = 6.4e+39", or just "1e+40".
std::string peak_computation(const OptimConfig& optim, int64_t global_batch) {
  const double peak = peak_lr(optim, global_batch);
  if (optim.scaling == "none") return fmt::format("{:g}", peak);
  const double k = static_cast<double>(global_batch) / static_cast<double>(optim.base_batch);
  const double factor = optim.scaling == "sqrt" ? std::sqrt(k) : k;
  return fmt::format("{:g} x {:.6g} ({}: {}batch.global {} / optim.base_batch {}) = {:g}",
                     optim.base_lr, factor, optim.scaling,
                     optim.scaling == "sqrt" ? "the square root of " : "", global_batch,
                     optim.base_batch, peak);
}

// The largest lr_scale of the parameter groups, or 1 (parameters no group matches keep the LR).
std::pair<double, std::string> largest_scale(const OptimConfig& optim) {
  std::pair<double, std::string> out{1.0, ""};
  for (size_t i = 0; i < optim.groups.size(); ++i) {
    if (optim.groups[i].lr_scale > out.first) {
      out = {optim.groups[i].lr_scale,
             fmt::format(" x lr_scale {:g} of optim.groups[{}]", optim.groups[i].lr_scale, i)};
    }
  }
  return out;
}

std::string beyond_float32(const std::string& what, const std::string& fix) {
  return fmt::format(
      "{} is beyond the largest float32 ({:.3g}): the optimizer applies the learning rate to "
      "float32 parameters, and the run would fail at its first update; {}",
      what, kMaxFloat32, fix);
}

}  // namespace

double peak_lr(const OptimConfig& optim, int64_t global_batch) {
  const double k = static_cast<double>(global_batch) / static_cast<double>(optim.base_batch);
  if (optim.scaling == "linear") return optim.base_lr * k;
  if (optim.scaling == "sqrt") return optim.base_lr * std::sqrt(k);
  return optim.base_lr;
}

void validate_learning_rates(const ExperimentConfig& config, std::vector<Diagnostic>& out,
                             const ReadContext* read) {
  const OptimConfig& optim = config.optim;
  const int64_t global = config.batch.global;
  if (global <= 0 || optim.base_batch <= 0 ||
      !keys_intact(read, {"optim.base_lr", "optim.base_batch", "optim.scaling", "optim.groups",
                          "batch.global", "schedule.end_lr"})) {
    return;  // the field rules report these keys
  }
  const auto [scale, scale_text] = largest_scale(optim);
  const double peak = peak_lr(optim, global);
  if (!(peak * scale <= kMaxFloat32)) {
    std::string what = "the learning rate";
    if (optim.scaling != "none" || !scale_text.empty()) {
      what = "the peak learning rate, " + peak_computation(optim, global) + scale_text +
             (scale_text.empty() ? "" : fmt::format(" = {:g}", peak * scale)) + ",";
    }
    out.push_back(lr_problem("optim.base_lr", format_float(optim.base_lr),
                             beyond_float32(what, "lower optim.base_lr")));
  }
  const double end_lr = config.schedule.end_lr;
  if (!(end_lr * scale <= kMaxFloat32)) {
    out.push_back(lr_problem(
        "schedule.end_lr", format_float(end_lr),
        beyond_float32(fmt::format("the final learning rate{}", scale_text), "lower it")));
  }
}

}  // namespace batchlab::config
