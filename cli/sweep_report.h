// The table a finished sweep ends with: per combination of the swept keys (optimizer and batch
// first), the final test accuracy, the generalization gap and the training time to the target,
// averaged over seeds: analysis::build_report's numbers (grouped by the swept keys) in the sweep's
// own layout and plan order. A sweep with a scaling study ends with the study report instead.
#pragma once

#include <string>

#include "sweeps/expand.h"

namespace batchlab::cli {

// "" when nothing has finished yet.
std::string sweep_report(const std::string& db_path, const sweeps::Plan& plan);

}  // namespace batchlab::cli
