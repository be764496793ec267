// Helpers shared by the config tests: small documents with the key under test at a known line,
// and assertions on the diagnostics a ConfigError carries.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/config/loader.h"
#include "core/errors.h"

namespace batchlab::config::testing {

inline constexpr const char* kSource = "test.toml";

// A valid document with `line` as line 3, inside [section] (line 2). The keys every config needs
// (batch.global, schedule.epochs) follow unless `line` sets them itself.
inline std::string doc(std::string_view section, std::string_view line) {
  auto starts = [&line](std::string_view prefix) {
    return line.substr(0, prefix.size()) == prefix;
  };
  std::string out =
      "schema_version = 1\n[" + std::string(section) + "]\n" + std::string(line) + "\n";
  // Required keys of the section under test go right after the line, so they stay in that table.
  if (section == "batch" && !starts("global")) out += "global = 256\n";
  if (section == "schedule" && !starts("epochs") && !starts("steps") && !starts("budget")) {
    out += "epochs = 10\n";
  }
  if (section != "batch") out += "[batch]\nglobal = 256\n";
  if (section != "schedule") out += "[schedule]\nepochs = 10\n";
  return out;
}

// The diagnostics parsing `text` produces; a test failure when it parses cleanly.
inline std::vector<Diagnostic> diagnostics_of(std::string_view text,
                                              const LoadOptions& options = {}) {
  try {
    parse_experiment(text, kSource, options);
  } catch (const ConfigError& e) {
    return e.diagnostics();
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << text;
  return {};
}

inline std::string describe(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) out += "\n  " + d.to_string();
  return out;
}

// Exactly one diagnostic, for `key` at line:column of test.toml, whose rule mentions `fix`.
inline void expect_one(std::string_view text, const std::string& key, int line, int column,
                       const std::string& fix, const LoadOptions& options = {}) {
  const auto diagnostics = diagnostics_of(text, options);
  ASSERT_EQ(diagnostics.size(), 1u) << describe(diagnostics);
  const Diagnostic& d = diagnostics.front();
  EXPECT_EQ(d.file, kSource) << d.to_string();
  EXPECT_EQ(d.key, key) << d.to_string();
  EXPECT_EQ(d.line, line) << d.to_string();
  EXPECT_EQ(d.column, column) << d.to_string();
  EXPECT_NE(d.rule.find(fix), std::string::npos)
      << "rule should mention '" << fix << "': " << d.to_string();
}

// Parses a document that must be valid.
inline ExperimentConfig parse_ok(std::string_view text, const LoadOptions& options = {}) {
  try {
    return parse_experiment(text, kSource, options);
  } catch (const ConfigError& e) {
    ADD_FAILURE() << e.what();
  }
  return {};
}

// Field-by-field equality of two configs, written out by hand (not through the field table) so
// that it also catches a key the table forgets to read or write.
inline void expect_same_config(const ExperimentConfig& a, const ExperimentConfig& b) {
  EXPECT_EQ(a.schema_version, b.schema_version);
  EXPECT_EQ(a.model.arch, b.model.arch);
  EXPECT_EQ(a.model.width, b.model.width);
  EXPECT_EQ(a.model.num_classes, b.model.num_classes);
  EXPECT_EQ(a.model.zero_init_residual, b.model.zero_init_residual);
  EXPECT_EQ(a.model.init_from, b.model.init_from);
  EXPECT_EQ(a.model.init_strict, b.model.init_strict);
  EXPECT_EQ(a.model.init_sha256, b.model.init_sha256);
  EXPECT_EQ(a.data.dataset, b.data.dataset);
  EXPECT_EQ(a.data.path, b.data.path);
  EXPECT_EQ(a.data.workers, b.data.workers);
  EXPECT_EQ(a.data.seed, b.data.seed);
  EXPECT_EQ(a.data.augment, b.data.augment);
  EXPECT_EQ(a.data.train_size, b.data.train_size);
  EXPECT_EQ(a.data.test_size, b.data.test_size);
  EXPECT_EQ(a.data.eval_train_samples, b.data.eval_train_samples);
  EXPECT_EQ(a.data.val_size, b.data.val_size);
  EXPECT_EQ(a.batch.global, b.batch.global);
  EXPECT_EQ(a.batch.micro, b.batch.micro);
  EXPECT_EQ(a.batch.bn_group, b.batch.bn_group);
  EXPECT_EQ(a.batch.schedule, b.batch.schedule);
  EXPECT_EQ(a.batch.ramp_start, b.batch.ramp_start);
  EXPECT_EQ(a.batch.ramp_double_every, b.batch.ramp_double_every);
  EXPECT_EQ(a.optim.name, b.optim.name);
  EXPECT_EQ(a.optim.base_lr, b.optim.base_lr);
  EXPECT_EQ(a.optim.base_batch, b.optim.base_batch);
  EXPECT_EQ(a.optim.scaling, b.optim.scaling);
  EXPECT_EQ(a.optim.momentum, b.optim.momentum);
  EXPECT_EQ(a.optim.nesterov, b.optim.nesterov);
  EXPECT_EQ(a.optim.betas, b.optim.betas);
  EXPECT_EQ(a.optim.eps, b.optim.eps);
  EXPECT_EQ(a.optim.weight_decay, b.optim.weight_decay);
  EXPECT_EQ(a.optim.trust_coefficient, b.optim.trust_coefficient);
  EXPECT_EQ(a.optim.trust_clip, b.optim.trust_clip);
  EXPECT_EQ(a.optim.always_adapt, b.optim.always_adapt);
  EXPECT_EQ(a.optim.lr_in_momentum, b.optim.lr_in_momentum);
  EXPECT_EQ(a.optim.bias_correction, b.optim.bias_correction);
  EXPECT_EQ(a.optim.grad_averaging, b.optim.grad_averaging);
  EXPECT_EQ(a.optim.grad_clip, b.optim.grad_clip);
  EXPECT_EQ(a.optim.implementation, b.optim.implementation);
  EXPECT_EQ(a.optim.ns_steps, b.optim.ns_steps);
  EXPECT_EQ(a.optim.ns_coefficients, b.optim.ns_coefficients);
  EXPECT_EQ(a.optim.ns_dtype, b.optim.ns_dtype);
  EXPECT_EQ(a.optim.muon_adjust_lr, b.optim.muon_adjust_lr);
  EXPECT_EQ(a.optim.poly_power, b.optim.poly_power);
  EXPECT_EQ(a.optim.weight_lr_power, b.optim.weight_lr_power);
  EXPECT_EQ(a.optim.weight_decay_scaling, b.optim.weight_decay_scaling);
  EXPECT_EQ(a.optim.base_weight_decay, b.optim.base_weight_decay);
  EXPECT_EQ(a.optim.beta2_half_life, b.optim.beta2_half_life);
  EXPECT_EQ(a.optim.beta2_floor, b.optim.beta2_floor);
  EXPECT_EQ(a.optim.exclude, b.optim.exclude);
  ASSERT_EQ(a.optim.groups.size(), b.optim.groups.size());
  for (size_t i = 0; i < a.optim.groups.size(); ++i) {
    EXPECT_EQ(a.optim.groups[i].match, b.optim.groups[i].match) << "group " << i;
    EXPECT_EQ(a.optim.groups[i].weight_decay, b.optim.groups[i].weight_decay) << "group " << i;
    EXPECT_EQ(a.optim.groups[i].adapt, b.optim.groups[i].adapt) << "group " << i;
    EXPECT_EQ(a.optim.groups[i].lr_scale, b.optim.groups[i].lr_scale) << "group " << i;
  }
  EXPECT_EQ(a.schedule.warmup_epochs, b.schedule.warmup_epochs);
  EXPECT_EQ(a.schedule.warmup_steps, b.schedule.warmup_steps);
  EXPECT_EQ(a.schedule.warmup_fraction, b.schedule.warmup_fraction);
  EXPECT_EQ(a.schedule.warmup_start, b.schedule.warmup_start);
  EXPECT_EQ(a.schedule.decay, b.schedule.decay);
  EXPECT_EQ(a.schedule.power, b.schedule.power);
  EXPECT_EQ(a.schedule.end_lr, b.schedule.end_lr);
  EXPECT_EQ(a.schedule.milestones, b.schedule.milestones);
  EXPECT_EQ(a.schedule.gamma, b.schedule.gamma);
  EXPECT_EQ(a.schedule.epochs, b.schedule.epochs);
  EXPECT_EQ(a.schedule.steps, b.schedule.steps);
  EXPECT_EQ(a.schedule.budget_s, b.schedule.budget_s);
  EXPECT_EQ(a.train.seed, b.train.seed);
  EXPECT_EQ(a.train.precision, b.train.precision);
  EXPECT_EQ(a.train.device, b.train.device);
  EXPECT_EQ(a.train.threads, b.train.threads);
  EXPECT_EQ(a.train.eval_every, b.train.eval_every);
  EXPECT_EQ(a.train.evals_per_octave, b.train.evals_per_octave);
  EXPECT_EQ(a.train.full_eval, b.train.full_eval);
  EXPECT_EQ(a.train.log_every, b.train.log_every);
  EXPECT_EQ(a.train.layer_stats_every, b.train.layer_stats_every);
  EXPECT_EQ(a.train.noise_scale, b.train.noise_scale);
  ASSERT_EQ(a.train.targets.size(), b.train.targets.size());
  for (size_t i = 0; i < a.train.targets.size(); ++i) {
    EXPECT_EQ(a.train.targets[i].metric, b.train.targets[i].metric) << "target " << i;
    EXPECT_EQ(a.train.targets[i].value, b.train.targets[i].value) << "target " << i;
  }
  EXPECT_EQ(a.train.stop_at_target, b.train.stop_at_target);
  EXPECT_EQ(a.train.checkpoint_every, b.train.checkpoint_every);
  EXPECT_EQ(a.train.divergence, b.train.divergence);
}

}  // namespace batchlab::config::testing
