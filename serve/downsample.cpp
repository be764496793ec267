#include "serve/downsample.h"

#include <algorithm>
#include <cmath>

namespace batchlab::serve {

std::vector<std::size_t> downsample_indices(const std::vector<double>& y, std::size_t max_points) {
  const std::size_t n = y.size();
  std::vector<std::size_t> keep;
  if (n <= max_points) {
    keep.resize(n);
    for (std::size_t i = 0; i < n; ++i) keep[i] = i;
    return keep;
  }
  // Each bucket contributes at most 5 points (first, min, max, first NaN, last), so the bound holds
  // even when every bucket has a gap.
  const std::size_t buckets = std::max<std::size_t>(1, max_points / 5);
  keep.reserve(buckets * 5);
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t lo = b * n / buckets;
    const std::size_t hi = (b + 1) * n / buckets;  // exclusive
    if (lo >= hi) continue;
    std::size_t min_i = hi, max_i = hi, nan_i = hi;
    for (std::size_t i = lo; i < hi; ++i) {
      const double v = y[i];
      if (std::isnan(v)) {
        if (nan_i == hi) nan_i = i;
        continue;
      }
      if (min_i == hi || v < y[min_i]) min_i = i;
      if (max_i == hi || v > y[max_i]) max_i = i;
    }
    std::size_t picked[5] = {lo, min_i, max_i, nan_i, hi - 1};
    std::sort(std::begin(picked), std::end(picked));
    std::size_t last_added = n;  // none yet in this bucket
    for (std::size_t i : picked) {
      if (i < hi && i != last_added) {
        keep.push_back(i);
        last_added = i;
      }
    }
  }
  return keep;
}

}  // namespace batchlab::serve
