#include "core/config/batch_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/config/canonical.h"
#include "core/config/validation.h"

namespace batchlab::config {

double beta2_for_batch(double half_life, double floor, int64_t global_batch) {
  return std::max(floor, std::pow(0.5, static_cast<double>(global_batch) / half_life));
}

double weight_decay_for_batch(double base_weight_decay, int64_t base_batch, int64_t global_batch) {
  return base_weight_decay * static_cast<double>(global_batch) / static_cast<double>(base_batch);
}

std::array<double, 2> resolved_betas(const ExperimentConfig& c) {
  std::array<double, 2> betas = c.optim.betas;
  if (c.optim.beta2_half_life > 0.0 && c.batch.global > 0) {
    betas[1] = beta2_for_batch(c.optim.beta2_half_life, c.optim.beta2_floor, c.batch.global);
  }
  return betas;
}

double resolved_weight_decay(const ExperimentConfig& c) {
  if (c.optim.weight_decay_scaling != "linear" || c.batch.global <= 0 || c.optim.base_batch <= 0) {
    return c.optim.weight_decay;
  }
  return weight_decay_for_batch(c.optim.base_weight_decay, c.optim.base_batch, c.batch.global);
}

OptimConfig optim_for_batch(const OptimConfig& optim, int64_t global_batch) {
  OptimConfig out = optim;
  if (optim.beta2_half_life > 0.0 && global_batch > 0) {
    out.betas[1] = beta2_for_batch(optim.beta2_half_life, optim.beta2_floor, global_batch);
  }
  if (optim.weight_decay_scaling == "linear" && global_batch > 0 && optim.base_batch > 0) {
    out.weight_decay =
        weight_decay_for_batch(optim.base_weight_decay, optim.base_batch, global_batch);
  }
  return out;
}

namespace {

Diagnostic diagnostic(std::string key, std::string value, std::string rule) {
  Diagnostic d;
  d.key = std::move(key);
  d.value = std::move(value);
  d.rule = std::move(rule);
  return d;
}

}  // namespace

void validate_batch_rules(const ExperimentConfig& config, std::vector<Diagnostic>& out,
                          const ReadContext* read) {
  const OptimConfig& optim = config.optim;
  const int64_t global = config.batch.global;
  if (global <= 0 || optim.base_batch <= 0) return;  // the field rules report these
  const bool has_beta2 = optim.name != "sgd" && optim.name != "nesterov" && optim.name != "lars";
  if (optim.beta2_half_life > 0.0 && !has_beta2 &&
      keys_intact(read, {"optim.beta2_half_life", "optim.name"})) {
    out.push_back(diagnostic("optim.beta2_half_life", format_float(optim.beta2_half_life),
                             fmt::format("optim.name = \"{}\" has no beta2; remove the key or "
                                         "use an Adam-family optimizer",
                                         optim.name)));
    return;
  }
  if (optim.beta2_half_life > 0.0 && keys_intact(read, {"optim.betas", "optim.beta2_half_life",
                                                        "optim.beta2_floor", "batch.global"})) {
    const double want = beta2_for_batch(optim.beta2_half_life, optim.beta2_floor, global);
    if (optim.betas[1] != want) {
      out.push_back(diagnostic(
          "optim.betas",
          fmt::format("[{}, {}]", format_float(optim.betas[0]), format_float(optim.betas[1])),
          fmt::format("beta2 is set by optim.beta2_half_life = {} examples (floor {}): {} at "
                      "batch.global = {}; give betas = [{}, {}] or leave optim.betas out",
                      format_float(optim.beta2_half_life), format_float(optim.beta2_floor),
                      format_float(want), global, format_float(optim.betas[0]),
                      format_float(want))));
    }
  }
  if (optim.weight_decay_scaling == "linear" &&
      keys_intact(read, {"optim.weight_decay", "optim.base_weight_decay",
                         "optim.weight_decay_scaling", "optim.base_batch", "batch.global"})) {
    if (!(optim.base_weight_decay > 0.0)) {
      out.push_back(diagnostic(
          "optim.weight_decay_scaling", format_string(optim.weight_decay_scaling),
          fmt::format("needs optim.base_weight_decay > 0 (the decay at optim.base_batch = {}, "
                      "scaled to each run's batch); set it, or set weight_decay_scaling = \"none\"",
                      optim.base_batch)));
      return;
    }
    const double want = weight_decay_for_batch(optim.base_weight_decay, optim.base_batch, global);
    if (optim.weight_decay != want) {
      out.push_back(diagnostic(
          "optim.weight_decay", format_float(optim.weight_decay),
          fmt::format("is set by optim.weight_decay_scaling = \"linear\": base_weight_decay {} x "
                      "batch.global {} / base_batch {} = {}; leave optim.weight_decay out (or "
                      "give that value)",
                      format_float(optim.base_weight_decay), global, optim.base_batch,
                      format_float(want))));
    }
  }
}

}  // namespace batchlab::config
