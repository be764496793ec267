// Gradient noise scale (McCandlish et al. 2018, "An Empirical Model of Large-Batch Training",
// appendix A.1). With |G_s|^2 the squared norm of a gradient estimated on b_small examples and
// |G_b|^2 that of one estimated on B_big examples, both unbiased estimators of the true gradient:
//   E|G_B|^2 = |G|^2 + tr(Sigma) / B, hence
//   |G|^2     ~ (B_big |G_b|^2 - b_small |G_s|^2) / (B_big - b_small)
//   tr(Sigma) ~ (|G_s|^2 - |G_b|^2) / (1/b_small - 1/B_big)
// Each estimate is noisy (either can be negative on one step), so both are smoothed with an
// exponential moving average before B_simple = tr(Sigma) / |G|^2 is formed, as in the paper.
// Here the small gradients are the micro-batch gradients of one accumulated step (their squared
// norms averaged over the micro-batches) and the big one is the accumulated gradient.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace batchlab::train {

struct NoiseScaleEstimate {
  int64_t b_small = 0;
  int64_t b_big = 0;
  double g2 = 0.0;           // smoothed |G|^2
  double trace_sigma = 0.0;  // smoothed tr(Sigma)
  double b_simple = 0.0;     // trace_sigma / g2 (infinite when g2 <= 0)
};

class NoiseScaleEstimator {
 public:
  // `ema` is the weight of the history (0.99 = slow, smooth; 0 = no smoothing).
  explicit NoiseScaleEstimator(double ema = 0.95);

  // One step: squared norms of each micro-batch gradient (each a mean over b_small examples) and of
  // the accumulated gradient (a mean over b_big = micro count x b_small examples).
  NoiseScaleEstimate update(const std::vector<double>& small_sq_norms, int64_t b_small,
                            double big_sq_norm, int64_t b_big);

  // The raw (unsmoothed) estimates of the last update.
  double last_raw_g2() const { return raw_g2_; }
  double last_raw_trace_sigma() const { return raw_trace_; }

  // For checkpoints: the smoothed state.
  struct State {
    double g2 = 0.0;
    double trace = 0.0;
    int64_t updates = 0;
  };
  State state() const { return state_; }
  void restore(const State& s) { state_ = s; }

 private:
  double ema_;
  State state_;
  double raw_g2_ = 0.0;
  double raw_trace_ = 0.0;
};

}  // namespace batchlab::train
