#include "cli/runtime_info.h"

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#include "core/train/device.h"

#ifndef BATCHLAB_GIT_SHA
#define BATCHLAB_GIT_SHA "unknown"
#endif

namespace batchlab::cli {

int64_t configure_threads(int64_t requested) {
  int64_t n = requested;
  if (n <= 0) n = std::max<int64_t>(1, std::thread::hardware_concurrency());
  at::set_num_threads(static_cast<int>(n));
  return at::get_num_threads();
}

std::string torch_version() { return TORCH_VERSION; }

std::string blas_library() {
  // The wheel's LibTorch has MKL linked in statically (no file to find); a LibTorch that links
  // libblas.so.3 instead gets whichever alternative is installed, OpenBLAS or the reference BLAS
  // (30x slower), and /proc/self/maps shows which file the loader actually mapped.
  if (at::hasMKL()) return "MKL (linked into LibTorch)";
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto pos = line.find('/');
    if (pos == std::string::npos) continue;
    std::string path = line.substr(pos);
    if (path.find("libblas") != std::string::npos ||
        path.find("libopenblas") != std::string::npos || path.find("libmkl") != std::string::npos) {
      return path;
    }
  }
  return "none loaded";
}

std::vector<std::string> devices() {
  std::vector<std::string> out;
  out.push_back(fmt::format("cpu ({} hardware threads)", std::thread::hardware_concurrency()));
  for (auto& d : train::cuda_device_descriptions()) out.push_back(std::move(d));
  return out;
}

std::string gpu_support() {
  if (!train::built_with_cuda())
    return "none (CPU LibTorch; docs/gpu.md builds against a CUDA one)";
  return fmt::format("CUDA yes, NCCL {}, {} device(s) visible",
                     train::built_with_nccl() ? "yes" : "no", torch::cuda::device_count());
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

std::string git_sha() { return BATCHLAB_GIT_SHA; }

std::string batchlab_version() {
#ifdef BATCHLAB_VERSION
  return BATCHLAB_VERSION;
#else
  return "dev";
#endif
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace batchlab::cli
