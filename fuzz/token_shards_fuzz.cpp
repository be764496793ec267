// A `batchlab data pack-text` folder (experiments/data/token_shards.h): its text index (a table of
// shards) and one shard file. The input is the index's length as two little-endian bytes, the
// index, then the bytes of the shard the index calls "s.bin". Every `crc32 X` of the index is set
// to the shard's CRC-32, so that the fuzzer explores the reader behind the checksum. Every document
// is read back.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "experiments/data/packed_format.h"
#include "experiments/data/token_shards.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  if (size < 2) return 0;
  const size_t index_bytes = std::min<size_t>(size - 2, data[0] | (size_t{data[1]} << 8));
  const auto text = fuzz::as_text(data + 2, size - 2);
  const auto shard = text.substr(index_bytes);
  const std::string crc = fmt::format(
      "{:08x}", data::crc32_of(reinterpret_cast<const uint8_t*>(shard.data()), shard.size()));
  std::string index(text.substr(0, index_bytes));
  for (size_t at = index.find("crc32 "); at != std::string::npos;
       at = index.find("crc32 ", at + 1)) {
    const size_t value = at + 6;
    const size_t end = std::min(index.find_first_of(" \n", value), index.size());
    index.replace(value, end - value, crc);
  }
  fuzz::write_file(data::kShardIndexName, index);
  fuzz::write_file("s.bin", shard);
  fuzz::refuse_only_as_input_error([&] {
    const auto shards = data::TokenShards::open(fuzz::scratch_dir().string());
    for (int64_t d = 0; d < shards->num_documents(); ++d) shards->document(d);
  });
  return 0;
}
