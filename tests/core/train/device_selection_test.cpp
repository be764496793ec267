// The device-selection rules (core/train/device_selection.h) as a pure function of the request and
// of what a machine shows, so the GPU cases run on the CPU.
#include "core/train/device_selection.h"

#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"

namespace batchlab::train {
namespace {

DeviceRequest request(const std::string& spec, int64_t local_rank = 0,
                      int64_t local_world_size = 1) {
  DeviceRequest r;
  r.spec = spec;
  r.local_rank = local_rank;
  r.local_world_size = local_world_size;
  return r;
}

VisibleDevices gpus(int64_t n) { return VisibleDevices{true, n}; }

// The InputError's message, or "" when none was thrown.
std::string error_of(const DeviceRequest& r, const VisibleDevices& v) {
  try {
    select_device(r, v);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceSelection, CpuIsTheCpuWhateverTheMachine) {
  EXPECT_TRUE(select_device(request("cpu", 3, 4), gpus(8)).is_cpu());
  EXPECT_TRUE(select_device(request("cpu"), VisibleDevices{}).is_cpu());
}

TEST(DeviceSelection, EachLocalRankTakesItsOwnGpu) {
  for (int64_t r = 0; r < 4; ++r) {
    const c10::Device d = select_device(request("cuda", r, 4), gpus(4));
    EXPECT_TRUE(d.is_cuda());
    EXPECT_EQ(d.index(), r);
  }
  EXPECT_EQ(select_device(request("cuda", 1, 2), gpus(8)).index(), 1);
}

TEST(DeviceSelection, OneVisibleGpuServesEveryLocalRankAsGpu0) {
  // Slurm's one-GPU-per-task binding: each of 4 tasks on a node sees only its own GPU.
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(select_device(request("cuda", r, 4), gpus(1)).index(), 0) << "local rank " << r;
  }
}

TEST(DeviceSelection, MoreLocalRanksThanGpusIsRefusedNamingBoth) {
  const std::string e = error_of(request("cuda", 3, 4), gpus(2));
  EXPECT_NE(e.find("train.device = cuda: local rank 3 of 4"), std::string::npos) << e;
  EXPECT_NE(e.find("2 visible"), std::string::npos) << e;
}

TEST(DeviceSelection, AnExplicitIndexIsTakenAsWrittenForOneProcess) {
  EXPECT_EQ(select_device(request("cuda:1"), gpus(2)).index(), 1);
  EXPECT_EQ(select_device(request("cuda:0"), gpus(1)).index(), 0);
}

TEST(DeviceSelection, AnExplicitIndexWithSeveralLocalRanksIsRefused) {
  // Every rank would land on GPU 1; the message says so and gives the fix.
  for (const int64_t visible : {1, 2, 8}) {
    const std::string e = error_of(request("cuda:1", 0, 2), gpus(visible));
    EXPECT_NE(e.find("train.device = cuda:1: 2 processes run on this host"), std::string::npos)
        << e;
    EXPECT_NE(e.find("use train.device = \"cuda\""), std::string::npos) << e;
  }
}

TEST(DeviceSelection, AMissingGpuIndexIsAnInputError) {
  const std::string e = error_of(request("cuda:2"), gpus(2));
  EXPECT_NE(e.find("GPU 2 does not exist (2 visible)"), std::string::npos) << e;
}

TEST(DeviceSelection, NoCudaBuildOrNoGpuNamesTheReason) {
  const std::string cpu_build = error_of(request("cuda"), VisibleDevices{false, 0});
  EXPECT_NE(cpu_build.find("built against a LibTorch without CUDA"), std::string::npos);
  const std::string no_gpu = error_of(request("cuda:0"), gpus(0));
  EXPECT_NE(no_gpu.find("train.device = cuda:0: no CUDA device is visible"), std::string::npos)
      << no_gpu;
}

TEST(DeviceSelection, MessagesNameTheSettingTheCallerGave) {
  DeviceRequest r = request("cuda");
  r.setting = "--device";
  const std::string e = error_of(r, VisibleDevices{false, 0});
  EXPECT_EQ(e.rfind("--device = cuda: ", 0), 0u) << e;
  EXPECT_NE(e.find("use --device = \"cpu\""), std::string::npos) << e;
}

}  // namespace
}  // namespace batchlab::train
