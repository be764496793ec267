// pack.index against offsets made to wrap around (issue 45, found reading
// experiments/data/packed_format.cpp for fuzz/pack_index_fuzz.cpp): a sample at offset 2^64 - 1
// of length 2 passed `offset + length <= shard bytes` (the sum wraps to 1) and would have been
// read far outside its shard's mapping.
#include "experiments/data/packed_format.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/errors.h"
#include "tests/temp_dir.h"

namespace batchlab::data {
namespace {

PackIndex one_sample_index(uint64_t offset, uint32_t length) {
  PackIndex index;
  index.format = PackFormat::raw;
  index.size = 4;
  index.classes = {"a"};
  index.shards = {{"train-00000.shard", 48, 0, 1}};
  index.train = {{0, offset, length, 4, 4, 0}};
  return index;
}

TEST(PackedFormat, ASampleWhoseOffsetWrapsAroundIsRefused) {
  test_support::TempDir dir("pack-index");
  write_pack_index(dir.path.string(), one_sample_index(0, 48));
  EXPECT_EQ(read_pack_index(dir.path.string()).train.size(), 1u);
  write_pack_index(dir.path.string(), one_sample_index(std::numeric_limits<uint64_t>::max(), 2));
  try {
    read_pack_index(dir.path.string());
    FAIL() << "a sample at offset 2^64 - 1 was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("train sample 0 refers to shard 0"), std::string::npos)
        << e.what();
  }
  write_pack_index(dir.path.string(), one_sample_index(40, 9));  // ends one byte past the shard
  EXPECT_THROW(read_pack_index(dir.path.string()), DataError);
}

}  // namespace
}  // namespace batchlab::data
