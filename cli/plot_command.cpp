// `batchlab plot --db PATH --figure NAME --out FILE.png [options]`: draws one figure with the
// Python script for it in analysis/plots (Debian's python3-matplotlib; reads the database with the
// standard library's sqlite3). The scripts run alone too; this command checks the arguments first
// and maps the script's outcome to batchlab's exit codes. The study figures draw from the study
// report's JSON (analysis/study_report.h), written here to a temporary file, so the fit they show
// is the report's own; a figure with one panel per study takes --db A.db,B.db (and --titles
// "A|B").
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <list>

#include "analysis/budget_report.h"
#include "analysis/study_report.h"
#include "cli/app.h"
#include "cli/args.h"

namespace batchlab::cli {

namespace {

namespace fs = std::filesystem;

// study: one study database; studies: one panel per study database (--db A.db,B.db).
enum class FigureKind { sweep, one_run, study, studies, budget };

struct Figure {
  const char* name;
  const char* script;
  FigureKind kind;
  const char* what;
};

const std::vector<Figure>& figures() {
  static const std::vector<Figure> all = {
      {"accuracy-vs-batch", "accuracy_vs_batch.py", FigureKind::sweep,
       "final (or --best) test metric vs global batch, one line per optimizer"},
      {"steps-to-target", "steps_to_target.py", FigureKind::sweep,
       "steps and epochs to a target vs batch, log-log, with perfect scaling"},
      {"gap-vs-batch", "gap_vs_batch.py", FigureKind::sweep,
       "generalization gap at the end vs batch"},
      {"layer-ratios", "layer_ratios.py", FigureKind::one_run,
       "heat map of log10 ||w||/||g|| per layer over training; trust ratios"},
      {"noise-scale", "noise_scale.py", FigureKind::one_run,
       "gradient noise scale B_simple over training"},
      {"lr-schedule", "lr_schedule.py", FigureKind::one_run, "learning rate per step of each run"},
      {"steps-vs-batch", "steps_vs_batch.py", FigureKind::study,
       "study: steps to target vs batch, log-log, with the S(B) fit and the B_simple prediction"},
      {"lr-sensitivity", "lr_sensitivity.py", FigureKind::study,
       "study: steps to target vs LR, one line per batch size, per optimizer"},
      {"final-vs-batch", "final_vs_batch.py", FigureKind::budget,
       "fixed-budget search: final test loss and accuracy vs batch per series, seeds and 95% "
       "intervals"},
      {"b-crit-vs-target", "b_crit_vs_target.py", FigureKind::study,
       "study: B_crit (95% over seeds) and the 20% batch against the depth of the target, from "
       "the same trials' evaluations"},
      {"scaling-panels", "scaling_panels.py", FigureKind::studies,
       "studies: steps to target vs batch, one panel per study (--db A.db,B.db), seed ranges, "
       "fits with 95% bands"},
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

const Figure& find_figure(const std::string& name) {
  for (const auto& f : figures()) {
    if (name == f.name) return f;
  }
  throw UsageError(fmt::format("--figure {}: unknown figure; one of:\n{}", name, figure_list()));
}

// The databases of --db: one, or for a figure of several studies a comma-separated list.
std::vector<std::string> databases(const Figure& figure, const std::string& db) {
  if (figure.kind != FigureKind::studies) return {db};
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= db.size()) {
    const size_t comma = std::min(db.find(',', start), db.size());
    if (comma > start) out.push_back(db.substr(start, comma - start));
    start = comma + 1;
  }
  if (out.empty()) {
    throw UsageError(
        fmt::format("--db {}: give one or more study databases, comma-separated "
                    "(one panel each)",
                    db));
  }
  return out;
}

void check_paths(const std::vector<std::string>& dbs, const std::string& out) {
  std::error_code ec;
  for (const auto& db : dbs) {
    if (!fs::is_regular_file(db, ec)) {
      throw UsageError(fmt::format("--db {}: no such database file", db));
    }
  }
  if (fs::path(out).extension() != ".png") {
    throw UsageError(fmt::format("--out {}: give a .png file name", out));
  }
  const fs::path parent = fs::absolute(fs::path(out)).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw UsageError(fmt::format("--out {}: directory {} does not exist", out, parent.string()));
  }
}

// Options that do not apply to the figure are refused rather than ignored.
void check_options(const Figure& figure, const Args& args) {
  const std::string name = figure.name;
  const bool study = figure.kind == FigureKind::study || figure.kind == FigureKind::studies ||
                     figure.kind == FigureKind::budget;
  if (args.value("titles") && figure.kind != FigureKind::studies) {
    throw UsageError(
        fmt::format("--titles: figure {} has one panel; --titles names the panels "
                    "of a figure of several studies (scaling-panels)",
                    name));
  }
  if (study) {
    for (const char* opt : {"where", "run", "metric", "target", "series"}) {
      if (args.value(opt)) {
        throw UsageError(
            fmt::format("--{}: figure {} draws the study tables of the database; it takes no --{}",
                        opt, name, opt));
      }
    }
    if (args.flag("best")) {
      throw UsageError(fmt::format("--best: figure {} takes no --best", name));
    }
  }
  if (args.value("series") && figure.kind == FigureKind::one_run) {
    throw UsageError(fmt::format("--series: figure {} draws runs, not series of a sweep", name));
  }
  if (args.value("run") && figure.kind == FigureKind::sweep) {
    throw UsageError(
        fmt::format("--run: figure {} shows a whole sweep; use --where to select runs", name));
  }
}

// --titles "A|B" names the panels of a figure of several studies, one title per database of --db
// (scaling_panels.py splits it the same way; an empty --titles gives the default titles). Checked
// here, so a miscount is refused before any report is built or Python starts.
void check_titles(const Args& args, const std::vector<std::string>& dbs) {
  const auto titles = args.value("titles");
  if (!titles || titles->empty()) return;
  const auto count = static_cast<size_t>(std::count(titles->begin(), titles->end(), '|')) + 1;
  if (count == dbs.size()) return;
  throw UsageError(
      fmt::format("--titles '{}' gives {} title{} for {} panel{} (--db gives {} database{}); give "
                  "one title per "
                  "database, separated by |",
                  *titles, count, count == 1 ? "" : "s", dbs.size(), dbs.size() == 1 ? "" : "s",
                  dbs.size(), dbs.size() == 1 ? "" : "s"));
}

// The study report as JSON in a temporary file, removed with the object.
struct StudyJson {
  fs::path path;
  StudyJson(const std::string& db, const std::string& figure, size_t index, bool budget) {
    path = fs::temp_directory_path() / fmt::format("batchlab-plot-{}-{}.json", ::getpid(), index);
    if (budget) {
      if (!analysis::has_budget_search(db)) {
        throw UsageError(fmt::format(
            "--figure {}: {} holds no fixed-budget search (no budget_cells rows); run a sweep with "
            "a [search] section (docs/sweeps.md)",
            figure, db));
      }
      std::ofstream(path) << analysis::format_budget_report(analysis::build_budget_report(db),
                                                            results::QueryFormat::kJson);
      return;
    }
    if (!analysis::has_study(db)) {
      throw UsageError(fmt::format(
          "--figure {}: {} holds no scaling study (no study_cells rows); run a sweep with a "
          "[study] section (docs/sweeps.md)",
          figure, db));
    }
    std::ofstream(path) << analysis::format_study_report(analysis::build_study_report(db, {}),
                                                         results::QueryFormat::kJson);
  }
  StudyJson(const StudyJson&) = delete;
  StudyJson& operator=(const StudyJson&) = delete;
  ~StudyJson() {
    std::error_code ec;
    if (!path.empty()) fs::remove(path, ec);
  }
};

// The interpreter, the figure's script and the options it takes.
std::vector<std::string> script_command(const Figure& figure, const Args& args,
                                        const std::string& db, const std::string& out) {
  const fs::path script = fs::path(plots_dir()) / figure.script;
  std::error_code ec;
  if (!fs::is_regular_file(script, ec)) {
    throw UsageError(
        fmt::format("figure script {} is missing (set BATCHLAB_PLOTS_DIR to the "
                    "checkout's analysis/plots)",
                    script.string()));
  }
  std::vector<std::string> command = {python(), script.string(), "--out", out};
  if (figure.kind != FigureKind::studies) command.insert(command.end(), {"--db", db});
  if (auto titles = args.value("titles")) command.insert(command.end(), {"--titles", *titles});
  for (const char* opt : {"where", "run", "metric", "target", "series"}) {
    if (auto v = args.value(opt)) {
      command.push_back(std::string("--") + opt);
      command.push_back(*v);
    }
  }
  if (args.flag("best")) command.push_back("--best");
  return command;
}

// Runs the script and returns its exit status (-1 when killed by a signal).
int run_script(std::vector<std::string> command) {
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
                 "batchlab plot: cannot run the Python interpreter %s: install Python 3 and "
                 "matplotlib with scripts/setup.sh --with-python (or: sudo apt-get install "
                 "python3-matplotlib), or set BATCHLAB_PYTHON to an interpreter that has "
                 "matplotlib\n",
                 c_args[0]);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int cmd_plot(const std::vector<std::string>& argv) {
  const std::string usage =
      "batchlab plot --db PATH --figure NAME --out FILE.png [--where SQL] [--run ID] "
      "[--metric test_acc|test_loss] [--best] [--target VALUE] [--series COLUMNS] "
      "[--titles \"A|B\"]\nfigures:\n" +
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
             {"titles", true, false},
             {"best", false, false}},
            usage);
  for (const char* required : {"db", "figure", "out"}) {
    if (!args.value(required)) {
      throw UsageError(fmt::format("missing --{}\nusage: {}", required, usage));
    }
  }
  const Figure& figure = find_figure(*args.value("figure"));
  const std::string db = *args.value("db");
  const std::string out = *args.value("out");
  const std::vector<std::string> dbs = databases(figure, db);
  check_paths(dbs, out);
  check_options(figure, args);
  check_titles(args, dbs);
  auto command = script_command(figure, args, db, out);
  // The study reports, one per panel; a std::list keeps each file's owner in place.
  std::list<StudyJson> reports;
  if (figure.kind == FigureKind::study || figure.kind == FigureKind::studies ||
      figure.kind == FigureKind::budget) {
    std::vector<std::string> paths;
    for (const auto& d : dbs) {
      const bool budget = figure.kind == FigureKind::budget;
      paths.push_back(reports.emplace_back(d, figure.name, paths.size(), budget).path);
    }
    command.insert(command.end(), {"--report", fmt::format("{}", fmt::join(paths, ","))});
  }
  const int code = run_script(std::move(command));
  if (code == 0) {
    fmt::print("wrote {}\n", out);
    return kExitOk;
  }
  // 2: the database cannot give the figure, or matplotlib is missing (the script's message says
  // which and how to install it); 127: no interpreter (said above).
  if (code == 2 || code == 127) return kExitBadInput;
  fmt::print(stderr, "batchlab plot: {} failed (exit status {})\n", figure.script, code);
  return kExitFailed;
}

}  // namespace batchlab::cli
