// The pixel size a PNG file declares, for the figure tests.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <string>

namespace batchlab::analysis::testing {

// Width and height from a PNG's IHDR chunk (bytes 16..23, big-endian); {0, 0} if not a PNG.
inline std::array<uint32_t, 2> png_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 24> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());
  const std::array<unsigned char, 8> magic = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!in || !std::equal(magic.begin(), magic.end(), head.begin())) return {0, 0};
  auto be32 = [&](int at) {
    return (uint32_t{head[at]} << 24) | (uint32_t{head[at + 1]} << 16) |
           (uint32_t{head[at + 2]} << 8) | uint32_t{head[at + 3]};
  };
  return {be32(16), be32(20)};
}

}  // namespace batchlab::analysis::testing
