#include "results/holm.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace batchlab::results {

std::vector<double> holm_adjusted(const std::vector<double>& p) {
  for (double v : p) {
    if (!(v >= 0.0 && v <= 1.0)) {
      throw std::invalid_argument("holm_adjusted: p-value " + std::to_string(v) +
                                  " outside [0, 1]");
    }
  }
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(p.size());
  const auto m = static_cast<double>(p.size());
  double running = 0.0;  // the max over the smaller p-values keeps the adjusted ones monotone
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const double scaled = std::min(1.0, (m - static_cast<double>(rank)) * p[order[rank]]);
    running = std::max(running, scaled);
    out[order[rank]] = running;
  }
  return out;
}

}  // namespace batchlab::results
