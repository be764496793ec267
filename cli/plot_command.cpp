// `batchlab plot --db PATH --figure NAME --out FILE.png [options]`: draws one figure with the
// Python script for it in analysis/plots (Debian's python3-matplotlib; reads the database with the
// standard library's sqlite3). The scripts run alone too; this command checks the arguments first
// and maps the script's outcome to batchlab's exit codes.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cli/app.h"
#include "cli/args.h"

namespace batchlab::cli {

namespace {

struct Figure {
  const char* name;
  const char* script;
  bool one_run;  // accepts --run
  const char* what;
};

const std::vector<Figure>& figures() {
  static const std::vector<Figure> all = {
      {"accuracy-vs-batch", "accuracy_vs_batch.py", false,
       "final (or --best) test metric vs global batch, one line per optimizer"},
      {"steps-to-target", "steps_to_target.py", false,
       "steps and epochs to a target vs batch, log-log, with perfect scaling"},
      {"gap-vs-batch", "gap_vs_batch.py", false, "generalization gap at the end vs batch"},
      {"layer-ratios", "layer_ratios.py", true,
       "heat map of log10 ||w||/||g|| per layer over training; trust ratios"},
      {"noise-scale", "noise_scale.py", true, "gradient noise scale B_simple over training"},
      {"lr-schedule", "lr_schedule.py", true, "learning rate per step of each run"},
  };
  return all;
}

std::string plots_dir() {
  if (const char* dir = std::getenv("BATCHLAB_PLOTS_DIR")) return dir;
  return BATCHLAB_PLOTS_DIR;
}

std::string python() {
  if (const char* py = std::getenv("BATCHLAB_PYTHON")) return py;
  return "/usr/bin/python3";  // Debian's, where python3-matplotlib lives
}

std::string figure_list() {
  std::string out;
  for (const auto& f : figures()) out += fmt::format("  {:<18} {}\n", f.name, f.what);
  return out;
}

}  // namespace

int cmd_plot(const std::vector<std::string>& argv) {
  const std::string usage =
      "batchlab plot --db PATH --figure NAME --out FILE.png [--where SQL] [--run ID] "
      "[--metric test_acc|test_loss] [--best] [--target VALUE] [--series COLUMNS]\nfigures:\n" +
      figure_list();
  Args args(argv,
            {{"db", true, false},
             {"figure", true, false},
             {"out", true, false},
             {"where", true, false},
             {"run", true, false},
             {"metric", true, false},
             {"target", true, false},
             {"series", true, false},
             {"best", false, false}},
            usage);
  for (const char* required : {"db", "figure", "out"}) {
    if (!args.value(required)) {
      throw UsageError(fmt::format("missing --{}\nusage: {}", required, usage));
    }
  }
  const std::string name = *args.value("figure");
  const Figure* figure = nullptr;
  for (const auto& f : figures()) {
    if (name == f.name) figure = &f;
  }
  if (figure == nullptr) {
    throw UsageError(fmt::format("--figure {}: unknown figure; one of:\n{}", name, figure_list()));
  }
  namespace fs = std::filesystem;
  const std::string db = *args.value("db");
  const std::string out = *args.value("out");
  std::error_code ec;
  if (!fs::is_regular_file(db, ec)) {
    throw UsageError(fmt::format("--db {}: no such database file", db));
  }
  if (fs::path(out).extension() != ".png") {
    throw UsageError(fmt::format("--out {}: give a .png file name", out));
  }
  const fs::path parent = fs::absolute(fs::path(out)).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw UsageError(fmt::format("--out {}: directory {} does not exist", out, parent.string()));
  }
  if (args.value("series") && figure->one_run) {
    throw UsageError(fmt::format("--series: figure {} draws runs, not series of a sweep", name));
  }
  if (args.value("run") && !figure->one_run) {
    throw UsageError(
        fmt::format("--run: figure {} shows a whole sweep; use --where to select runs", name));
  }
  const fs::path script = fs::path(plots_dir()) / figure->script;
  if (!fs::is_regular_file(script, ec)) {
    throw UsageError(
        fmt::format("figure script {} is missing (set BATCHLAB_PLOTS_DIR to the "
                    "checkout's analysis/plots)",
                    script.string()));
  }

  std::vector<std::string> command = {python(), script.string(), "--db", db, "--out", out};
  for (const char* opt : {"where", "run", "metric", "target", "series"}) {
    if (auto v = args.value(opt)) {
      command.push_back(std::string("--") + opt);
      command.push_back(*v);
    }
  }
  if (args.flag("best")) command.push_back("--best");

  std::vector<char*> c_args;
  for (auto& a : command) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot start the plotting script: fork failed");
  if (pid == 0) {
    execv(c_args[0], c_args.data());
    std::fprintf(stderr,
                 "batchlab plot: cannot run %s (install python3-matplotlib: "
                 "scripts/setup.sh --with-python, or set BATCHLAB_PYTHON)\n",
                 c_args[0]);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) {
    fmt::print("wrote {}\n", out);
    return kExitOk;
  }
  // The scripts exit 2 when the database cannot give the figure (their message says why).
  if (code == 2) return kExitBadInput;
  fmt::print(stderr, "batchlab plot: {} failed (exit status {})\n", figure->script, code);
  return kExitFailed;
}

}  // namespace batchlab::cli
