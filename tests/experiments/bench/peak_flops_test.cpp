#include "experiments/bench/peak_flops.h"

#include <gtest/gtest.h>

namespace batchlab::experiments {
namespace {

TEST(PeakFlops, H100SxmAndH200HaveTheirBf16DensePeak) {
  const auto h100 = known_peak("NVIDIA H100 80GB HBM3", "bf16");
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->tflops, 989.0);
  EXPECT_NE(h100->source.find("H100 SXM5"), std::string::npos);
  const auto h200 = known_peak("NVIDIA H200", "bf16");
  ASSERT_TRUE(h200.has_value());
  EXPECT_EQ(h200->tflops, 989.0);
}

TEST(PeakFlops, OtherBoardsPrecisionsAndTheCpuAreUnknown) {
  EXPECT_FALSE(known_peak("NVIDIA H100 PCIe", "bf16").has_value());
  EXPECT_FALSE(known_peak("NVIDIA H100 NVL", "bf16").has_value());
  EXPECT_FALSE(known_peak("NVIDIA H200 NVL", "bf16").has_value());
  EXPECT_FALSE(known_peak("NVIDIA H100 80GB HBM3", "fp32").has_value());
  EXPECT_FALSE(known_peak("NVIDIA A100-SXM4-80GB", "bf16").has_value());
  EXPECT_FALSE(known_peak("cpu", "bf16").has_value());
}

}  // namespace
}  // namespace batchlab::experiments
