// Every rule that relates several config keys fires at `batchlab sweep plan` time, before anything
// runs: the real command, on a spec with one job per rule, each breaking its rule, exits 2 and
// points at the offending value in the spec (file:line:col) with the rule's message and the job.
// Validation lives in core/config only, so a rule checked later (after the data loads, in the
// optimizer factory or the LR schedule) would pass `sweep plan` and fail here.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/sweeps/sweep_cli_util.h"

namespace batchlab::sweeps {
namespace {

using testing::SweepDir;

struct Case {
  const char* rule;      // test label
  const char* settings;  // when-clause lines that break the rule in this case's job
  const char* key;       // the key the diagnostic names
  const char* says;      // a fragment of its message
};

// The base (tests/sweeps/sweep_cli_util.h tiny_base): small_resnet on 512 synthetic samples,
// global 64 as 2 x 32, sgd, 2 epochs.
const std::vector<Case> kCases = {
    {"batch geometry", "\"batch.global\" = 100", "batch.global",
     "not world_size (1) x micro (32) x accumulation"},
    {"micro at most global", "\"batch.micro\" = 128", "batch.micro",
     "must be <= batch.global (64)"},
    {"bn_group divides micro", "\"batch.bn_group\" = 24", "batch.bn_group",
     "does not divide the micro-batch (32)"},
    {"one warmup", "\"schedule.warmup_epochs\" = 1\n\"schedule.warmup_steps\" = 4",
     "schedule.warmup_steps", "set at most one of"},
    // One key of a group alone replaces the base's (exclusive_keys.h); two from the spec conflict.
    {"one length", "\"schedule.epochs\" = 2\n\"schedule.steps\" = 100", "schedule.steps",
     "set exactly one of schedule.epochs, schedule.steps or schedule.budget"},
    {"budget warms up by fraction", "\"schedule.budget\" = \"1h\"\n\"schedule.warmup_steps\" = 4",
     "schedule.warmup_steps", "with schedule.budget only warmup_fraction is allowed"},
    {"budget without step decay",
     "\"schedule.budget\" = \"1h\"\n\"schedule.decay\" = \"step\"\n\"schedule.milestones\" = [1]",
     "schedule.decay", "with schedule.budget the decay must be constant, linear, poly or cosine"},
    {"step decay needs milestones", "\"schedule.decay\" = \"step\"", "schedule.decay",
     "needs schedule.milestones"},
    {"warmup no longer than the run", "\"schedule.warmup_epochs\" = 3", "schedule.warmup_epochs",
     "longer than the run (schedule.epochs = 2.0)"},
    {"nesterov needs momentum", "\"optim.name\" = \"nesterov\"\n\"optim.momentum\" = 0.0",
     "optim.momentum", "must be > 0 with Nesterov momentum"},
    {"next sentence needs pairs", "\"model.next_sentence\" = true", "model.next_sentence",
     "needs data.sentence_pair = true"},
    {"sequence holds special tokens", "\"data.seq_len\" = 2", "data.seq_len", "must be >= 3"},
    {"second phase not shorter", "\"data.seq_len_phase2\" = 64", "data.seq_len_phase2",
     "must be 0 (no second phase) or >= data.seq_len (128)"},
    {"sequence fits the position embedding", "\"data.seq_len\" = 1024", "data.seq_len",
     "longer than model.max_seq_len (512)"},
    {"accuracy target is a fraction", "\"train.target\" = [{ metric = \"test_acc\", value = 76 }]",
     "train.target[0].value", "an accuracy target must be in (0, 1]"},
    {"validation target needs a split",
     "\"train.target\" = [{ metric = \"val_acc\", value = 0.9 }]", "train.target[0].metric",
     "needs a validation split held out of the training set"},
    {"stop at target needs a target", "\"train.stop_at_target\" = true", "train.stop_at_target",
     "needs a train.target to stop at"},
};

// One job per case (train.seed = its index), each breaking its rule through a when-clause, so one
// `sweep plan` reports them all.
std::string spec_body() {
  std::string seeds;
  std::string whens;
  for (size_t i = 0; i < kCases.size(); ++i) {
    seeds += (i > 0 ? ", " : "") + std::to_string(i);
    whens += "[when.\"train.seed=" + std::to_string(i) + "\"]\n" + kCases[i].settings + "\n";
  }
  return "[grid]\n\"train.seed\" = [" + seeds + "]\n" + whens;
}

TEST(PlanValidation, EveryCrossKeyRuleFiresAtPlanTime) {
  SweepDir s("plan_rules", spec_body());
  const auto r = s.sweep("plan");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  std::vector<std::string> lines;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (size_t i = 0; i < kCases.size(); ++i) {
    const Case& c = kCases[i];
    SCOPED_TRACE(c.rule);
    // file:line:col: key = value: rule [in job #N train.seed=i], at the value in the spec.
    const std::regex located(std::string(R"(/spec\.toml:[1-9][0-9]*:[1-9][0-9]*: )") +
                             std::regex_replace(c.key, std::regex(R"([.\[\]])"), R"(\$&)") + " = ");
    const std::string job = "train.seed=" + std::to_string(i) + "]";
    bool found = false;
    for (const auto& line : lines) {
      found =
          found || (std::regex_search(line, located) && line.find(c.says) != std::string::npos &&
                    line.find(job) != std::string::npos);
    }
    EXPECT_TRUE(found) << "no spec.toml:line:col: " << c.key << " = ...: " << c.says << " [" << job
                       << " in:\n"
                       << r.output;
  }
}

TEST(PlanValidation, AValidSpecStillPlans) {
  // The same base with settings that satisfy the rules: the cases above fail for their rule only.
  SweepDir s("plan_ok",
             "[grid]\n\"optim.name\" = [\"nesterov\"]\n\"optim.momentum\" = [0.9]\n"
             "\"schedule.warmup_epochs\" = [1]\n\"model.next_sentence\" = [true]\n"
             "\"data.sentence_pair\" = [true]\n");
  const auto r = s.sweep("plan");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace batchlab::sweeps
