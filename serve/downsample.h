// Server-side downsampling of a curve for the page: a million-row loss curve must stay light, yet
// the spike where a large-batch run diverged, or the dip after a warmup restart, must not vanish
// the way it would under stride sampling or averaging. The points are split into buckets of equal
// count along the series; each bucket keeps its first point, its minimum, its maximum and its last
// point (the min-max family of M4, Jugel et al., VLDB 2014), so the drawn envelope is the true one.
#pragma once

#include <cstddef>
#include <vector>

namespace batchlab::serve {

// Indices of the points to keep, ascending, at most max(max_points, 5) of them; all indices when
// y has at most max_points values. y may hold NaN for a missing (non-finite) value: a bucket keeps
// its first NaN as well, so a gap in the curve stays a gap. The first and the last point and the
// global minimum and maximum are always kept.
std::vector<std::size_t> downsample_indices(const std::vector<double>& y, std::size_t max_points);

}  // namespace batchlab::serve
