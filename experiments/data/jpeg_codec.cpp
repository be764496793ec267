#include "experiments/data/jpeg_codec.h"

#include <fmt/format.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>

#include "core/errors.h"

namespace batchlab::data {
namespace {

// libjpeg reports a file that ends before its last scan as a warning and fills the missing rows
// with grey; for training data that is corruption, not a usable image.
bool is_truncation_warning(const std::string& message) {
  std::string m = message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  return m.find("premature end") != std::string::npos;
}

// Adobe CMYK JPEGs store inverted ink values, so the decoded bytes are (255 - ink): red is then
// proportional to c * k, and so on.
void cmyk_to_rgb(const uint8_t* cmyk, int64_t pixels, uint8_t* rgb) {
  for (int64_t i = 0; i < pixels; ++i) {
    const int c = cmyk[4 * i], m = cmyk[4 * i + 1], y = cmyk[4 * i + 2], k = cmyk[4 * i + 3];
    rgb[3 * i] = static_cast<uint8_t>((c * k + 127) / 255);
    rgb[3 * i + 1] = static_cast<uint8_t>((m * k + 127) / 255);
    rgb[3 * i + 2] = static_cast<uint8_t>((y * k + 127) / 255);
  }
}

}  // namespace

DctScale choose_dct_scale(double crop_w, double crop_h, int64_t out_w, int64_t out_h) {
  // Largest reduction first; the crop's scaled size must still cover the output.
  for (int den : {8, 4, 2}) {
    if (crop_w / den >= static_cast<double>(out_w) && crop_h / den >= static_cast<double>(out_h)) {
      return {1, den};
    }
  }
  return {1, 1};
}

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {
  if (!handle_)
    throw Error(
        fmt::format("TurboJPEG: cannot create a decompressor: {}", tjGetErrorStr2(nullptr)));
}

JpegDecoder::~JpegDecoder() { tjDestroy(static_cast<tjhandle>(handle_)); }

void JpegDecoder::reset() {
  // After a failed call TurboJPEG 2.1's decompressor can be left mid-stream (the next header read
  // then reports a 0x0 image): start over with a fresh handle.
  tjDestroy(static_cast<tjhandle>(handle_));
  handle_ = tjInitDecompress();
  if (!handle_)
    throw Error(
        fmt::format("TurboJPEG: cannot create a decompressor: {}", tjGetErrorStr2(nullptr)));
}

JpegHeader JpegDecoder::read_header(const uint8_t* data, size_t size, const std::string& name) {
  auto* h = static_cast<tjhandle>(handle_);
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (size == 0 || tjDecompressHeader3(h, data, static_cast<unsigned long>(size), &width, &height,
                                       &subsamp, &colorspace) != 0) {
    const std::string why = size == 0 ? "empty file" : tjGetErrorStr2(h);
    reset();
    throw DataError(fmt::format("{}: not a readable JPEG ({})", name, why));
  }
  if (width <= 0 || height <= 0) {
    reset();
    throw DataError(
        fmt::format("{}: JPEG header gives an empty image ({}x{})", name, width, height));
  }
  colorspace_ = colorspace;
  return {width, height};
}

ImageView JpegDecoder::decode(const uint8_t* data, size_t size, DctScale scale,
                              const std::string& name) {
  auto* h = static_cast<tjhandle>(handle_);
  const JpegHeader header = read_header(data, size, name);
  const int64_t w = scale.scaled(header.width), hh = scale.scaled(header.height);
  const bool cmyk = colorspace_ == TJCS_CMYK || colorspace_ == TJCS_YCCK;
  const int pixel_format = cmyk ? TJPF_CMYK : TJPF_RGB;
  const int64_t channels = cmyk ? 4 : 3;
  std::vector<uint8_t>& target = cmyk ? cmyk_ : pixels_;
  target.resize(static_cast<size_t>(w * hh * channels));
  const int rc =
      tjDecompress2(h, data, static_cast<unsigned long>(size), target.data(), static_cast<int>(w),
                    static_cast<int>(w * channels), static_cast<int>(hh), pixel_format, 0);
  if (rc != 0) {
    const std::string message = tjGetErrorStr2(h);
    if (tjGetErrorCode(h) == TJERR_FATAL || is_truncation_warning(message)) {
      reset();
      throw DataError(fmt::format("{}: corrupt or truncated JPEG ({})", name, message));
    }
  }
  if (cmyk) {
    pixels_.resize(static_cast<size_t>(w * hh * 3));
    cmyk_to_rgb(cmyk_.data(), w * hh, pixels_.data());
  }
  return {pixels_.data(), w, hh, w * 3};
}

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {
  if (!handle_)
    throw Error(fmt::format("TurboJPEG: cannot create a compressor: {}", tjGetErrorStr2(nullptr)));
}

JpegEncoder::~JpegEncoder() { tjDestroy(static_cast<tjhandle>(handle_)); }

std::vector<uint8_t> JpegEncoder::encode(const ImageView& image, int quality) {
  auto* h = static_cast<tjhandle>(handle_);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(h, image.pixels, static_cast<int>(image.width), static_cast<int>(image.stride),
                  static_cast<int>(image.height), TJPF_RGB, &buffer, &size, TJSAMP_420, quality, 0);
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(buffer, tjFree);
  if (rc != 0) {
    throw Error(fmt::format("TurboJPEG: cannot encode a {}x{} image: {}", image.width, image.height,
                            tjGetErrorStr2(h)));
  }
  return std::vector<uint8_t>(buffer, buffer + size);
}

void read_file_bytes(const std::string& path, std::vector<uint8_t>& out) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw DataError(fmt::format("{}: cannot open for reading", path));
  if (std::fseek(f.get(), 0, SEEK_END) != 0) throw DataError(fmt::format("{}: cannot seek", path));
  const long size = std::ftell(f.get());
  if (size < 0) throw DataError(fmt::format("{}: cannot tell the file size", path));
  std::rewind(f.get());
  out.resize(static_cast<size_t>(size));
  if (size > 0 && std::fread(out.data(), 1, out.size(), f.get()) != out.size()) {
    throw DataError(fmt::format("{}: read error", path));
  }
}

}  // namespace batchlab::data
