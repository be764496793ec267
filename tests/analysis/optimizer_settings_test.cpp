// analysis/optimizer_settings.h: the settings each optimizer uses, read from resolved configs as
// the canonical writer leaves them, the reader's defaults for absent keys (LAMB's grad_clip 1.0 and
// eps 1e-6), the differences between two runs, a series' searched and per-cell values, and a
// config that is not TOML.
#include "analysis/optimizer_settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

namespace batchlab::analysis {
namespace {

// An [optim] and [schedule] as the canonical writer orders them (cf. the text study's configs).
std::string config(const std::string& optim, const std::string& schedule = "warmup_steps = 20\n") {
  return "schema_version = 1\n[optim]\nbase_batch = 16\nbase_lr = 0.01\nscaling = \"sqrt\"\n" +
         optim + "\n[schedule]\ndecay = \"constant\"\nsteps = 6000\n" + schedule;
}

std::string value(const EffectiveSettings& s, const std::string& key) {
  for (const auto& x : s) {
    if (x.key == key) return x.value;
  }
  return "<absent>";
}

TEST(OptimizerSettings, LambListsItsOwnKnobsAndTheReadersDefaultsForAbsentKeys) {
  const auto s = settings_of(config("name = \"lamb\"\nweight_decay = 0.01\n"));
  EXPECT_EQ(value(s, "optimizer"), "lamb");
  EXPECT_EQ(value(s, "scaling"), "sqrt from batch 16");
  EXPECT_EQ(value(s, "warmup"), "20 steps");
  EXPECT_EQ(value(s, "decay"), "constant");
  EXPECT_EQ(value(s, "grad_clip"), "global norm 1");  // LAMB's default when absent
  EXPECT_EQ(value(s, "eps"), "1e-06");
  EXPECT_EQ(value(s, "betas"), "[0.9, 0.999]");
  EXPECT_EQ(value(s, "always_adapt"), "false");
  EXPECT_EQ(value(s, "trust_ratio_on"), "every tensor but ndim<2");
  EXPECT_EQ(value(s, "weight_decay"), "0.01");
  EXPECT_EQ(value(s, "weight_decay_on"), "every tensor but ndim<2");
  // Knobs LAMB does not have are not listed.
  EXPECT_EQ(value(s, "momentum"), "<absent>");
  EXPECT_EQ(value(s, "trust_coefficient"), "<absent>");
  EXPECT_EQ(value(s, "lr_in_momentum"), "<absent>");
  // In setting_order().
  ASSERT_GE(s.size(), 3u);
  EXPECT_EQ(s[0].key, "optimizer");
  EXPECT_EQ(s[1].key, "scaling");
}

TEST(OptimizerSettings, LarsAndSgdTypesListMomentumAndNoBetas) {
  const auto lars = settings_of(
      config("name = \"lars\"\nmomentum = 0.9\ntrust_coefficient = 0.01\nalways_adapt = true\n"
             "lr_in_momentum = true\ngrad_clip = 0.0\neps = 1e-08\nbetas = [0.9, 0.98]\n"));
  EXPECT_EQ(value(lars, "grad_clip"), "off");
  EXPECT_EQ(value(lars, "momentum"), "0.9");
  EXPECT_EQ(value(lars, "nesterov"), "false");
  EXPECT_EQ(value(lars, "trust_coefficient"), "0.01");
  EXPECT_EQ(value(lars, "lr_in_momentum"), "true");
  EXPECT_EQ(value(lars, "trust_ratio_on"), "every tensor");  // always_adapt
  EXPECT_EQ(value(lars, "betas"), "<absent>");
  const auto nesterov = settings_of(config("name = \"nesterov\"\n"));
  EXPECT_EQ(value(nesterov, "nesterov"), "true");  // the name implies it
  EXPECT_EQ(value(nesterov, "grad_clip"), "off");  // every optimizer but LAMB
  EXPECT_EQ(value(nesterov, "eps"), "<absent>");
  EXPECT_EQ(value(nesterov, "trust_ratio_on"), "<absent>");
  const auto adamw = settings_of(config("name = \"adamw\"\nbetas = [0.9, 0.98]\n"));
  EXPECT_EQ(value(adamw, "eps"), "1e-08");
  EXPECT_EQ(value(adamw, "betas"), "[0.9, 0.98]");
  EXPECT_EQ(value(adamw, "momentum"), "<absent>");
}

TEST(OptimizerSettings, MuonSchedulFreeAndLionListTheirOwnKnobs) {
  const auto muon = settings_of(
      config("name = \"muon\"\nns_steps = 5\nns_coefficients = [3.4445, -4.775, 2.0315]\n"
             "ns_dtype = \"bf16\"\nmuon_adjust_lr = \"original\"\n"));
  EXPECT_EQ(value(muon, "momentum"), "0.95");  // Muon's default when absent
  EXPECT_EQ(value(muon, "nesterov"), "true");
  EXPECT_EQ(value(muon, "ns_steps"), "5");
  EXPECT_EQ(value(muon, "ns_coefficients"), "[3.4445, -4.775, 2.0315]");
  EXPECT_EQ(value(muon, "muon_adjust_lr"), "original");
  EXPECT_EQ(value(muon, "betas"), "[0.9, 0.999]");  // its AdamW group
  const auto lion = settings_of(config("name = \"lion\"\n"));
  EXPECT_EQ(value(lion, "betas"), "[0.9, 0.99]");
  EXPECT_EQ(value(lion, "eps"), "<absent>");
  EXPECT_EQ(value(lion, "momentum"), "<absent>");
  const auto sf = settings_of(config("name = \"schedulefree_adamw\"\nweight_lr_power = 2.0\n"));
  EXPECT_EQ(value(sf, "weight_lr_power"), "2");
  EXPECT_EQ(value(sf, "poly_power"), "0");
  EXPECT_EQ(value(sf, "eps"), "1e-08");
}

TEST(OptimizerSettings, WarmupDecayAndExclusionsAreRenderedAsConfigured) {
  EXPECT_EQ(value(settings_of(config("name = \"sgd\"\n", "warmup_epochs = 0.5\n")), "warmup"),
            "0.5 epochs");
  EXPECT_EQ(value(settings_of(config("name = \"sgd\"\n", "warmup_fraction = 0.05\n")), "warmup"),
            "5% of the run");
  EXPECT_EQ(value(settings_of(config("name = \"sgd\"\n", "")), "warmup"), "none");
  EXPECT_EQ(value(settings_of(config("name = \"sgd\"\n", "warmup_steps = 8\nwarmup_start = 0.1\n")),
                  "warmup"),
            "8 steps, from 0.1x the peak");
  const std::string poly =
      "schema_version = 1\n[optim]\nname = \"sgd\"\n[schedule]\ndecay = \"poly\"\npower = 2.0\n"
      "end_lr = 0.0001\nsteps = 10\n";
  EXPECT_EQ(value(settings_of(poly), "decay"), "poly (power 2) to 0.0001");
  const auto grouped =
      settings_of(config("name = \"lars\"\nexclude = [\"ndim<2\", \"*.bias\"]\n"
                         "groups = [{ match = \"embed*\", weight_decay = 0.0, adapt = false }]\n"));
  EXPECT_EQ(value(grouped, "weight_decay_on"),
            "every tensor but ndim<2, *.bias; embed* at 0; embed* not adapted");
  EXPECT_EQ(value(settings_of(config("name = \"sgd\"\nexclude = []\n")), "weight_decay_on"),
            "every tensor");
}

TEST(OptimizerSettings, DifferingSettingsNamesEveryKeyThatDiffersAndOnlyThose) {
  const auto lamb = settings_of(config("name = \"lamb\"\nweight_decay = 0.01\n"));
  const auto lars = settings_of(config("name = \"lars\"\nweight_decay = 0.01\n"));
  const auto diffs = differing_settings(lamb, lars);
  std::map<std::string, std::pair<std::string, std::string>> by_key;
  for (const auto& d : diffs) by_key[d.key] = {d.a, d.b};
  EXPECT_EQ(by_key["optimizer"], std::make_pair(std::string("lamb"), std::string("lars")));
  EXPECT_EQ(by_key["grad_clip"], std::make_pair(std::string("global norm 1"), std::string("off")));
  EXPECT_EQ(by_key["eps"], std::make_pair(std::string("1e-06"), std::string("1e-08")));
  EXPECT_EQ(by_key["betas"].second, std::string(kNotUsed));
  EXPECT_EQ(by_key["momentum"].first, std::string(kNotUsed));
  // Equal on both sides: not a difference.
  EXPECT_EQ(by_key.count("weight_decay"), 0u);
  EXPECT_EQ(by_key.count("warmup"), 0u);
  EXPECT_EQ(by_key.count("always_adapt"), 0u);
  EXPECT_TRUE(differing_settings(lamb, lamb).empty());
}

TEST(OptimizerSettings, ASeriesShowsSearchedAndPerCellValuesInAscendingOrder) {
  auto lars = [](const std::string& tc, const std::string& warmup) {
    return settings_of(
        config("name = \"lars\"\ntrust_coefficient = " + tc + "\n", "warmup_steps = " + warmup));
  };
  // Cell 1 searched the trust coefficient; the warmup is set per cell.
  const auto merged = merge_cell_settings(
      {{lars("0.01", "100"), lars("0.001", "100")}, {lars("0.001", "20"), lars("0.002", "20")}});
  EXPECT_EQ(value(merged, "trust_coefficient"), "searched: 0.001, 0.002, 0.01");
  EXPECT_EQ(value(merged, "warmup"), "per cell: 20 steps, 100 steps");
  EXPECT_EQ(value(merged, "optimizer"), "lars");
  // A series mixing an optimizer with and without a key lists the key as not used in some runs.
  const auto mixed =
      merge_cell_settings({{lars("0.001", "20")}, {settings_of(config("name = \"sgd\"\n"))}});
  EXPECT_EQ(value(mixed, "trust_coefficient"), "per cell: 0.001, " + std::string(kNotUsed));
}

TEST(OptimizerSettings, AConfigThatIsNotTomlIsRefusedNamingWhere) {
  try {
    settings_of("[optim\nname = 1");
    FAIL() << "no SettingsError";
  } catch (const SettingsError& e) {
    EXPECT_NE(std::string(e.what()).find("runs.config_toml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace batchlab::analysis
