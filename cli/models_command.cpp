// `batchlab models`: one line per architecture of the models table: name, parameter count,
// training FLOPs per sample (per sequence for the BERT family) at its reference input, that input,
// and what it is. The FLOPs convention (models/registry.h ModelCost) is the one the reports' model-
// FLOPs utilization uses: 2 per multiply-accumulate, backward = 2 x forward.
#include <fmt/format.h>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/si_format.h"
#include "models/registry.h"

namespace batchlab::cli {

int cmd_models(const std::vector<std::string>& argv) {
  Args args(argv, {{"verbose", false, false}},
            "batchlab models [--verbose]   (--verbose adds each architecture's description)");
  if (!args.positionals().empty()) {
    throw UsageError(fmt::format("unexpected argument '{}'\nusage: {}", args.positionals().front(),
                                 args.usage()));
  }
  fmt::print("{:<14} {:>13} {:>9}  {:>15}  {}\n", "arch", "parameters", "", "train FLOPs/ex",
             "reference input");
  for (const auto& info : models::list_models()) {
    const auto s = models::summarize_model(info);
    fmt::print("{:<14} {:>13} {:>9}  {:>15}  {}\n", info.name, s.parameters,
               "(" + si(static_cast<double>(s.parameters)) + ")",
               si(static_cast<double>(s.training_flops)), s.input);
    if (args.flag("verbose")) fmt::print("{:<14} {}\n", "", info.description);
  }
  return kExitOk;
}

}  // namespace batchlab::cli
