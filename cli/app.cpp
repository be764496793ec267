#include "cli/app.h"

#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <map>

#include "cli/args.h"
#include "core/errors.h"
#include "results/errors.h"

namespace batchlab::cli {

namespace {

constexpr const char* kAppUsage =
    "usage: batchlab <command> [arguments]\n"
    "commands:\n"
    "  train CONFIG.toml [--set k=v]... [--db PATH] [--run-id ID] [--nproc N]\n"
    "                                                               run one training job (N local "
    "ranks)\n"
    "  query --db PATH \"SELECT ...\" [--format table|csv|json]       read-only SQL\n"
    "  sweep plan|run|status|submit SWEEP.toml [options]           sweeps (batchlab sweep --help)\n"
    "  report --db PATH [--group-by k1,k2] [--where SQL] [--format F] per-group results of a "
    "sweep\n"
    "  compare --db STUDY.db A B [--sweep ID] [--format F]          two series of a scaling "
    "study\n"
    "  plot --db PATH --figure NAME --out FILE.png [--run ID]       figures (batchlab plot "
    "--help)\n"
    "  results ingest --db PATH [RECORDS.db|DIR]...                 fold job records into PATH\n"
    "  export --db PATH --run ID [--checkpoint final|best|STEP] --out FILE.pt\n"
    "                                                               a run's weights for PyTorch\n"
    "  serve --db PATH [--port N] [--host ADDR]                     live dashboard (127.0.0.1)\n"
    "  data pack|tokenizer|pack-text ...                            dataset preparation\n"
    "  models                                                       architectures and sizes\n"
    "  bench --model M [--device D] [--precision P] [--steps N]     synthetic-data throughput, "
    "MFU\n"
    "  version                                                      versions, BLAS, threads, "
    "devices\n"
    "every command answers --help (batchlab <command> [subcommand] --help, or batchlab help ...)\n";

using Command = std::function<int(const std::vector<std::string>&)>;

}  // namespace

int run_app(int argc, char** argv) {
  const std::map<std::string, Command> commands = {
      {"train", cmd_train},    {"query", cmd_query},   {"version", cmd_version},
      {"models", cmd_models},  {"sweep", cmd_sweep},   {"results", cmd_results},
      {"data", cmd_data},      {"report", cmd_report}, {"plot", cmd_plot},
      {"export", cmd_export},  {"bench", cmd_bench},   {"serve", cmd_serve},
      {"compare", cmd_compare}};
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) {
    std::fputs(kAppUsage, stderr);
    return kExitBadInput;
  }
  // `batchlab help` is the overview; `batchlab help sweep run` is `batchlab sweep run --help`.
  if (words.front() == "help") {
    words.erase(words.begin());
    words.push_back("--help");
  }
  if (is_help_word(words.front())) {
    std::fputs(kAppUsage, stdout);
    return kExitOk;
  }
  const std::string name = words.front();
  auto it = commands.find(name);
  if (it == commands.end()) {
    fmt::print(stderr, "batchlab: unknown command '{}'\n{}", name, kAppUsage);
    return kExitBadInput;
  }
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  try {
    return it->second(rest);
  } catch (const HelpRequested& help) {
    fmt::print("usage: {}\n", help.usage());
    return kExitOk;
  } catch (const InputError& e) {
    fmt::print(stderr, "batchlab {}: {}\n", name, e.what());
    return kExitBadInput;
  } catch (const results::StoreInputError& e) {
    fmt::print(stderr, "batchlab {}: {}\n", name, e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "batchlab {}: error: {}\n", name, e.what());
    return kExitFailed;
  }
}

}  // namespace batchlab::cli
