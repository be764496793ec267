// `batchlab bench --model M [options]`: training throughput of one model on synthetic,
// device-resident data (experiments/bench/throughput.h), printed as a table or as JSON.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/runtime_info.h"
#include "cli/si_format.h"
#include "core/config/bench_config.h"
#include "core/config/host_rules.h"
#include "experiments/bench/throughput.h"
#include "models/registry.h"

namespace batchlab::cli {

namespace {

constexpr const char* kBenchUsage =
    "batchlab bench --model M [--device D] [--precision fp32|bf16] [--steps N] [--warmup N] "
    "[--batch B] [--accum K] [--channels-last] [--optimizer NAME] [--seq-len L] "
    "[--image-size S] [--peak-tflops X] [--threads N] [--format table|json]\n"
    "\n"
    "Times training steps of a model on random examples that stay on the device: forward and\n"
    "backward over K micro-batches of B / K samples, then the optimizer step, as `batchlab train`\n"
    "takes them (no data loading, metrics or evaluation). Warm-up steps are not timed.\n"
    "  --model M           an architecture of `batchlab models`\n"
    "  --device D          cpu (default), cuda or cuda:N\n"
    "  --precision P       fp32 (default) or bf16 (autocast, as train.precision)\n"
    "  --steps N           timed steps (default 20)\n"
    "  --warmup N          untimed steps before them (default 3)\n"
    "  --batch B           samples per step (default 32)\n"
    "  --accum K           micro-batches per step (default 1)\n"
    "  --channels-last     NHWC weights and images (image models)\n"
    "  --optimizer NAME    sgd (default), nesterov, adam, adamw, lars or lamb, with the defaults\n"
    "                      of a config file that sets only optim.name\n"
    "  --seq-len L         tokens per sequence (text models: default 128 for BERT, the\n"
    "                      reference context of `batchlab models` for GPT-2)\n"
    "  --image-size S      S x S images (image models, default the model's reference input)\n"
    "  --peak-tflops X     the device's peak TFLOP/s for MFU (default: H100/H200 bf16 from a\n"
    "                      table; otherwise MFU is not computed)\n"
    "  --threads N         intra-op threads (default 0 = hardware concurrency)\n"
    "  --format F          table (default) or json\n"
    "FLOPs per sample are those of `batchlab models`: 3 x forward (the backward pass counted as\n"
    "twice the forward), the optimizer step not counted.";

config::BenchConfig bench_config(const Args& args) {
  if (!args.positionals().empty()) {
    throw UsageError(fmt::format("unexpected argument '{}'\nusage: {}", args.positionals().front(),
                                 args.usage()));
  }
  config::BenchConfig b;
  b.model = args.value("model").value_or("");
  b.device = args.value("device").value_or(b.device);
  b.precision = args.value("precision").value_or(b.precision);
  b.optimizer = args.value("optimizer").value_or(b.optimizer);
  b.steps = args.integer("steps").value_or(b.steps);
  b.warmup = args.integer("warmup").value_or(b.warmup);
  b.batch = args.integer("batch").value_or(b.batch);
  b.accum = args.integer("accum").value_or(b.accum);
  b.threads = args.integer("threads").value_or(b.threads);
  b.channels_last = args.flag("channels-last");
  if (auto v = args.integer("seq-len")) b.seq_len = *v;
  if (auto v = args.integer("image-size")) b.image_size = *v;
  b.peak_tflops = args.number("peak-tflops");
  return b;
}

config::BenchModels bench_models() {
  config::BenchModels names;
  for (const auto& m : models::list_models()) {
    if (m.family == "causal_lm") {
      names.causal_lm[m.name] = m.seq_len;  // its reference context
    } else {
      (m.family == "text" ? names.text : names.image).push_back(m.name);
    }
  }
  return names;
}

std::string mfu_text(const experiments::BenchResult& r) {
  if (!r.mfu) return "n/a (pass --peak-tflops)";
  return fmt::format("{:.1f}% of {:g} TFLOP/s ({})", 100.0 * *r.mfu, *r.peak_tflops, r.peak_source);
}

void print_table(const experiments::BenchResult& r) {
  const auto ms = [](double s) { return fmt::format("{:.2f} ms", 1000.0 * s); };
  const auto [lo, hi] = std::minmax_element(r.step_s.begin(), r.step_s.end());
  const std::string name = r.device_name == r.device ? "" : " (" + r.device_name + ")";
  fmt::print("bench {} on {}{}, {}, optimizer {}, {} thread{}\n", r.model, r.device, name,
             r.precision, r.optimizer, r.threads, r.threads == 1 ? "" : "s");
  fmt::print("  input        {}{}\n", r.input, r.channels_last ? ", channels-last" : "");
  fmt::print("  batch        {} samples = {} micro-batch{} x {}\n", r.batch, r.accum,
             r.accum == 1 ? "" : "es", r.micro_batch);
  fmt::print("  steps        {} timed ({}), after {} warm-up steps\n", r.step_s.size(), r.timing,
             r.warmup_steps);
  fmt::print("  step time    median {}, min {}, max {}\n", ms(r.median_step_s), ms(*lo), ms(*hi));
  fmt::print("  samples/s    {:.1f}\n", r.samples_per_s);
  if (r.tokens_per_sample > 0) fmt::print("  tokens/s     {:.0f}\n", r.tokens_per_s);
  fmt::print("  train FLOPs  {} FLOP per sample (3 x forward, as `batchlab models`)\n",
             si(static_cast<double>(r.train_flops_per_sample)));
  fmt::print("  achieved     {:.4g} TFLOP/s\n", r.achieved_tflops);
  fmt::print("  MFU          {}\n", mfu_text(r));
  fmt::print("  loss         {:.4g} (last step)\n", r.last_loss);
}

nlohmann::json to_json(const experiments::BenchResult& r) {
  nlohmann::json j;
  j["model"] = r.model;
  j["family"] = r.family;
  j["input"] = r.input;
  j["device"] = r.device;
  j["device_name"] = r.device_name;
  j["precision"] = r.precision;
  j["optimizer"] = r.optimizer;
  j["channels_last"] = r.channels_last;
  j["threads"] = r.threads;
  j["batch"] = r.batch;
  j["micro_batch"] = r.micro_batch;
  j["accum"] = r.accum;
  j["warmup_steps"] = r.warmup_steps;
  j["steps"] = r.step_s.size();
  j["timing"] = r.timing;
  j["step_times_s"] = r.step_s;
  j["median_step_s"] = r.median_step_s;
  j["samples_per_s"] = r.samples_per_s;
  j["tokens_per_s"] = r.tokens_per_sample > 0 ? nlohmann::json(r.tokens_per_s) : nullptr;
  j["train_flops_per_sample"] = r.train_flops_per_sample;
  j["flops_convention"] = "3 x forward (batchlab models); optimizer step not counted";
  j["achieved_tflops"] = r.achieved_tflops;
  j["peak_tflops"] = r.peak_tflops ? nlohmann::json(*r.peak_tflops) : nullptr;
  j["peak_source"] = r.peak_tflops ? nlohmann::json(r.peak_source) : nullptr;
  j["mfu"] = r.mfu ? nlohmann::json(*r.mfu) : nullptr;
  j["last_loss"] = r.last_loss;
  return j;
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"model", true, false},
             {"device", true, false},
             {"precision", true, false},
             {"steps", true, false},
             {"warmup", true, false},
             {"batch", true, false},
             {"accum", true, false},
             {"channels-last", false, false},
             {"optimizer", true, false},
             {"seq-len", true, false},
             {"image-size", true, false},
             {"peak-tflops", true, false},
             {"threads", true, false},
             {"format", true, false}},
            kBenchUsage);
  const std::string format = args.value("format").value_or("table");
  if (format != "table" && format != "json") {
    throw UsageError(fmt::format("--format {}: not a format; use table or json\nusage: {}", format,
                                 kBenchUsage));
  }
  const config::BenchConfig bench = bench_config(args);
  config::check_bench(bench, bench_models());
  const config::Host host{static_cast<int64_t>(std::thread::hardware_concurrency()), 1};
  for (const auto& w : config::bench_host_warnings(bench, host)) {
    fmt::print(stderr, "warning: {} = {}: {}\n", w.key, w.value, w.rule);
  }
  configure_threads(bench.threads);
  const experiments::BenchResult result = experiments::run_bench(bench);
  if (format == "json") {
    fmt::print("{}\n", to_json(result).dump(2));
  } else {
    print_table(result);
  }
  return kExitOk;
}

}  // namespace batchlab::cli
