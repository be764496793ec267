// Resampling a crop of an RGB image to a fixed output size: the one pixel-moving step of the image
// pipeline (random-resized-crop, eval resize + center crop, and `batchlab data pack`'s pre-resize).
//
// The filter is a triangle ("bilinear") whose support widens with the reduction factor, as PIL's
// antialiased bilinear resize does, so a 2x reduction averages instead of aliasing. The crop box
// has fractional coordinates and samples outside it but inside the image contribute at its edges
// (weights are renormalized at the image border). Separable: a vertical pass over the crop's rows
// (contiguous, vectorized) into a float row, then a horizontal pass writing uint8. On x86-64 CPUs
// with AVX2 both passes run 8 lanes wide; the arithmetic is the same (no FMA), so the bytes are
// identical on every machine.
//
// Measured against torch's interpolate on the same crops in bench/jpeg_pipeline_bench.cpp
// (BM_ResizeOwn vs BM_ResizeTorch): this uint8 path avoids the float copies of the whole crop.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/data/jpeg_codec.h"

namespace batchlab::data {

// A region of an image in pixel units: (x, y) is the top-left corner, (0, 0) the image's corner.
struct CropBox {
  double x = 0.0;
  double y = 0.0;
  double width = 0.0;
  double height = 0.0;
};

enum class PixelLayout {
  chw,  // three planes of out_h x out_w (the [3, H, W] slice of a batch tensor)
  hwc,  // interleaved RGB rows (a packed-shard sample)
};

// One axis of the resampling: output i reads source pixels start[i] .. start[i] + taps - 1 with
// weights[i * taps ..] (zero-padded to a common tap count so the inner loops have fixed length).
struct ResampleFilter {
  int64_t taps = 0;
  std::vector<int64_t> start;
  std::vector<float> weights;
};

// Buffers reused across calls (one per thread).
struct ResampleScratch {
  ResampleFilter horizontal;
  ResampleFilter vertical;
  std::vector<float> row;
};

// Fills `filter` to map source positions [offset, offset + length) of an axis with `limit` pixels
// onto `count` outputs.
void build_resample_filter(double offset, double length, int64_t count, int64_t limit,
                           ResampleFilter& filter);

// Resamples `box` of `src` to out_w x out_h pixels at `out`, mirrored left-right when `flip`.
// `out` holds 3 * out_w * out_h bytes in `layout`.
void resample_crop(const ImageView& src, const CropBox& box, int64_t out_w, int64_t out_h,
                   bool flip, PixelLayout layout, uint8_t* out, ResampleScratch& scratch);

}  // namespace batchlab::data
