#include "core/config/bench_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/config/batch_geometry.h"
#include "core/config/experiment_config.h"
#include "core/config/limits.h"
#include "core/config/model_config.h"
#include "core/config/read_context.h"
#include "core/config/reader.h"
#include "core/config/rules.h"
#include "core/config/schema.h"
#include "core/errors.h"

namespace batchlab::config {
namespace {

// Diagnostics name the argument as the user typed it; "arguments" stands where a file would.
constexpr const char* kWhere = "arguments";

class Problems {
 public:
  void add(std::string argument, std::string value, std::string rule) {
    Diagnostic d;
    d.file = kWhere;
    d.key = std::move(argument);
    d.value = std::move(value);
    d.rule = std::move(rule);
    list_.push_back(std::move(d));
  }
  // Applies a single-value rule from rules.h.
  template <class T, class Rule>
  void check(const std::string& argument, const T& value, const Rule& rule) {
    if (auto message = rule(value)) add(argument, fmt::format("{}", value), std::move(*message));
  }
  void throw_if_any() {
    if (!list_.empty()) throw ConfigError(std::move(list_));
  }

 private:
  std::vector<Diagnostic> list_;
};

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Arguments that only one family of models takes.
void check_family(const BenchConfig& b, const BenchModels& models, Problems& p) {
  const bool image = contains(models.image, b.model);
  const auto causal = models.causal_lm.find(b.model);
  const bool text = contains(models.text, b.model) || causal != models.causal_lm.end();
  if (text && b.image_size) {
    p.add("--image-size", fmt::format("{}", *b.image_size),
          fmt::format("{} is a text model; --seq-len sets its input size", b.model));
  }
  if (text && b.channels_last) {
    p.add("--channels-last", "",
          fmt::format("{} is a text model; only image models have a "
                      "memory format",
                      b.model));
  }
  if (image && b.seq_len) {
    p.add("--seq-len", fmt::format("{}", *b.seq_len),
          fmt::format("{} is an image model; --image-size sets its input size", b.model));
  }
  // The BERT presets' position embeddings, or the GPT-2 preset's reference context.
  const int64_t max_len =
      causal != models.causal_lm.end() ? causal->second : ModelConfig{}.max_seq_len;
  if (b.seq_len && (*b.seq_len < 1 || *b.seq_len > max_len)) {
    p.add("--seq-len", fmt::format("{}", *b.seq_len),
          fmt::format("must be in [1, {}] ({}'s position embeddings, model.max_seq_len)", max_len,
                      b.model.empty() ? "the models" : b.model));
  }
  if (b.image_size) p.check("--image-size", *b.image_size, greater_than(0));
}

}  // namespace

void check_bench(const BenchConfig& b, const BenchModels& models) {
  Problems p;
  std::vector<std::string> all = models.image;
  all.insert(all.end(), models.text.begin(), models.text.end());
  for (const auto& [name, context] : models.causal_lm) all.push_back(name);
  if (b.model.empty()) {
    p.add("--model", "",
          "missing; name an architecture of `batchlab models` (e.g. --model "
          "small_resnet)");
  } else {
    p.check("--model", b.model, one_of(all));
  }
  p.check("--device", b.device, DeviceName{});
  p.check("--precision", b.precision, one_of(precision_names()));
  p.check("--optimizer", b.optimizer, one_of(optimizer_names()));
  p.check("--steps", b.steps, at_least(1));
  p.check("--warmup", b.warmup, at_least(0));
  p.check("--batch", b.batch, at_least(1));
  p.check("--accum", b.accum, at_least(1));
  p.check("--threads", b.threads,
          both(at_least(0), at_most(kMaxThreads,
                                    "use at most the machine's cores, or 0 for one "
                                    "per core")));
  if (b.peak_tflops) p.check("--peak-tflops", *b.peak_tflops, greater_than(0));
  if (b.batch >= 1 && b.accum >= 1 && micro_batch_for_accumulation(b.batch, b.accum, 1) == 0) {
    p.add("--batch", fmt::format("{}", b.batch),
          fmt::format("must be a multiple of --accum = {}: each of the {} micro-batches holds "
                      "--batch / --accum samples",
                      b.accum, b.accum));
  }
  check_family(b, models, p);
  p.throw_if_any();
}

OptimConfig bench_optim(const std::string& name) {
  ExperimentConfig c;
  c.optim.name = name;
  // Nothing was given but the name: every derived default applies, as for a config file that
  // sets only optim.name.
  const ReadContext nothing_given(kWhere, known_key_paths());
  resolve_derived(c, nothing_given);
  return c.optim;
}

}  // namespace batchlab::config
