// `batchlab version` and `batchlab models`.
#include <fmt/format.h>

#include "cli/allocator_tuning.h"
#include "cli/app.h"
#include "cli/args.h"
#include "cli/runtime_info.h"
#include "models/registry.h"

namespace batchlab::cli {

int cmd_version(const std::vector<std::string>& argv) {
  Args args(argv, {{"threads", true, false}}, "batchlab version [--threads N]");
  const int64_t threads = configure_threads(args.integer("threads").value_or(0));
  // One small matrix product so the BLAS library is loaded and can be named.
  (void)torch::mm(torch::ones({8, 8}), torch::ones({8, 8}));
  fmt::print("batchlab {} (git {})\n", batchlab_version(), git_sha());
  fmt::print("LibTorch {}\n", torch_version());
  fmt::print("BLAS {}\n", blas_library());
  fmt::print("intra-op threads {}\n", threads);
  fmt::print("GPU support {}\n", gpu_support());
  fmt::print("malloc {}\n", allocator_tuning());
  for (const auto& d : devices()) fmt::print("device {}\n", d);
  return kExitOk;
}

}  // namespace batchlab::cli
