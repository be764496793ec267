#include "core/config/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace batchlab::config {
namespace {

// FIPS 180-2 appendix B / NIST CSRC example vectors.
TEST(Sha256, FipsVectorAbc) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FipsVectorEmpty) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, FipsVectorTwoBlocks) {
  // 56 bytes: the length no longer fits in the first block's padding.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FipsVectorMillionA) {
  // Fed in uneven pieces so the buffering across update() calls is exercised too.
  Sha256 hasher;
  const std::string chunk(997, 'a');
  size_t fed = 0;
  while (fed + chunk.size() <= 1000000) {
    hasher.update(chunk);
    fed += chunk.size();
  }
  hasher.update(std::string(1000000 - fed, 'a'));
  std::string hex;
  for (uint8_t byte : hasher.digest()) {
    static constexpr char kHex[] = "0123456789abcdef";
    hex += kHex[byte >> 4];
    hex += kHex[byte & 0xf];
  }
  EXPECT_EQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace batchlab::config
