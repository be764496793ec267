// JPEG decoding and encoding with libjpeg-turbo's TurboJPEG API. Decoding reads the header first
// so the caller can choose a DCT-domain scaling factor (1, 1/2, 1/4 or 1/8: the factors with SIMD
// inverse DCTs; the others are slower than a full-size decode) from the crop it will take; the
// IDCT then produces the smaller image directly, which is both faster and an antialiasing
// prefilter.
//
// One JpegDecoder per thread (a TurboJPEG handle is not thread-safe); its pixel buffer is reused
// across images, so steady-state decoding allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace batchlab::data {

// Interleaved RGB pixels (3 bytes per pixel, rows `stride` bytes apart); not owned.
struct ImageView {
  const uint8_t* pixels = nullptr;
  int64_t width = 0;
  int64_t height = 0;
  int64_t stride = 0;
};

struct JpegHeader {
  int64_t width = 0;
  int64_t height = 0;
};

// A DCT scaling factor num/den applied to both dimensions (sizes round up, as libjpeg does).
struct DctScale {
  int num = 1;
  int den = 1;
  int64_t scaled(int64_t size) const { return (size * num + den - 1) / den; }
};

// The smallest of 1/8, 1/4, 1/2, 1 that keeps a crop of crop_w x crop_h source pixels at least
// out_w x out_h pixels after scaling, so the resize that follows only ever shrinks by less than 2x
// (or enlarges a crop that is smaller than the output to begin with).
DctScale choose_dct_scale(double crop_w, double crop_h, int64_t out_w, int64_t out_h);

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Reads the header of `size` bytes at `data`. `name` (a path, or shard and offset) only appears
  // in error messages. Throws DataError naming it when the bytes are not a readable JPEG.
  JpegHeader read_header(const uint8_t* data, size_t size, const std::string& name);

  // Decodes to RGB at `scale`; the view stays valid until the next decode. Throws DataError naming
  // `name` for a corrupt or truncated image (libjpeg's "premature end of data" warning counts as
  // an error: the bottom of the image would be grey). Other warnings, such as extraneous bytes
  // before a marker, leave a complete image and are accepted, as PIL does. CMYK/YCCK images (a
  // few dozen in ImageNet) are converted to RGB assuming Adobe's inverted CMYK.
  ImageView decode(const uint8_t* data, size_t size, DctScale scale, const std::string& name);

 private:
  void reset();

  void* handle_;
  std::vector<uint8_t> pixels_;
  std::vector<uint8_t> cmyk_;
  int colorspace_ = 0;  // of the last header read
};

class JpegEncoder {
 public:
  JpegEncoder();
  ~JpegEncoder();
  JpegEncoder(const JpegEncoder&) = delete;
  JpegEncoder& operator=(const JpegEncoder&) = delete;

  // Interleaved RGB -> JPEG bytes at `quality` (1-100) with 4:2:0 chroma subsampling, the layout
  // of nearly all camera and ImageNet files.
  std::vector<uint8_t> encode(const ImageView& image, int quality);

 private:
  void* handle_;
};

// Reads a whole file into `out` (resized to fit). Throws DataError naming the path.
void read_file_bytes(const std::string& path, std::vector<uint8_t>& out);

}  // namespace batchlab::data
