// A JPEG image (an ImageNet folder, a JPEG pack): experiments/data/jpeg_codec.h, the header and a
// decode at every DCT scale the loader uses.
#include "experiments/data/jpeg_codec.h"
#include "fuzz/fuzz_support.h"

// Where the pixels' sum goes, so the compiler cannot drop the reads.
volatile unsigned g_pixel_sum = 0;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  static data::JpegDecoder decoder;
  fuzz::refuse_only_as_input_error([&] {
    const auto header = decoder.read_header(data, size, "input.jpg");
    // A large image at full scale costs seconds per input: decode those at 1/8 only.
    const bool small = header.width * header.height <= 1024 * 1024;
    for (const int den : {8, 2, 1}) {
      if (den != 8 && !small) break;
      const auto view = decoder.decode(data, size, data::DctScale{1, den}, "input.jpg");
      // Touch every pixel: a view that claims more rows than were written is ASan's to catch.
      unsigned sum = 0;
      for (int64_t y = 0; y < view.height; ++y) {
        for (int64_t x = 0; x < view.width * 3; ++x) sum += view.pixels[y * view.stride + x];
      }
      g_pixel_sum = sum;
    }
  });
  return 0;
}
