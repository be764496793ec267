// A `batchlab data pack` folder's pack.index (experiments/data/packed_format.h). The input is the
// index without its trailing CRC-32; the harness appends the right one, so that the fuzzer
// explores the parser behind the checksum instead of the checksum.
#include <string>

#include "experiments/data/packed_format.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  std::string bytes(fuzz::as_text(data, size));
  const uint32_t crc = data::crc32_of(data, size);
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  fuzz::write_file(data::kPackIndexFile, bytes);
  fuzz::refuse_only_as_input_error([&] { data::read_pack_index(fuzz::scratch_dir().string()); });
  return 0;
}
