// The table a finished sweep ends with: per optimizer and batch size, the final test accuracy,
// the generalization gap and the training time to the target accuracy, averaged over seeds, read
// from the sweep database (read-only).
#pragma once

#include <string>

#include "sweeps/expand.h"

namespace batchlab::cli {

// "" when nothing has finished yet.
std::string sweep_report(const std::string& db_path, const sweeps::Plan& plan);

}  // namespace batchlab::cli
