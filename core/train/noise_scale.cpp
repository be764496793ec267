#include "core/train/noise_scale.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "core/errors.h"

namespace batchlab::train {

NoiseScaleEstimator::NoiseScaleEstimator(double ema) : ema_(ema) {}

NoiseScaleEstimate NoiseScaleEstimator::update(const std::vector<double>& small_sq_norms,
                                               int64_t b_small, double big_sq_norm, int64_t b_big) {
  if (small_sq_norms.empty() || b_small <= 0 || b_big <= b_small) {
    throw Error("noise scale needs at least two micro-batches per step (b_big > b_small)");
  }
  const double small = std::accumulate(small_sq_norms.begin(), small_sq_norms.end(), 0.0) /
                       static_cast<double>(small_sq_norms.size());
  const auto bs = static_cast<double>(b_small), bb = static_cast<double>(b_big);
  raw_g2_ = (bb * big_sq_norm - bs * small) / (bb - bs);
  raw_trace_ = (small - big_sq_norm) / (1.0 / bs - 1.0 / bb);

  // Bias-corrected EMA (as Adam's moments): early values are not pulled towards zero.
  state_.g2 = ema_ * state_.g2 + (1.0 - ema_) * raw_g2_;
  state_.trace = ema_ * state_.trace + (1.0 - ema_) * raw_trace_;
  ++state_.updates;
  const double correction = 1.0 - std::pow(ema_, static_cast<double>(state_.updates));

  NoiseScaleEstimate e;
  e.b_small = b_small;
  e.b_big = b_big;
  e.g2 = state_.g2 / correction;
  e.trace_sigma = state_.trace / correction;
  e.b_simple = e.g2 > 0 ? e.trace_sigma / e.g2 : std::numeric_limits<double>::infinity();
  return e;
}

}  // namespace batchlab::train
