// SHA-256 (FIPS 180-4), used for run ids: the id must be identical on every machine and for every
// build, so it is computed here rather than borrowed from a library whose availability varies.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace batchlab::config {

// Incremental hasher: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::array<uint8_t, 32> digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Lower-case hex digest of `bytes` (64 characters).
std::string sha256_hex(std::string_view bytes);

// A digest as 64 lower-case hex characters.
std::string to_hex(const std::array<uint8_t, 32>& digest);

}  // namespace batchlab::config
