// Helpers for the text-data tests: a scratch directory, a generated pseudo-English corpus (the
// tests never depend on the python3.11-doc sources being installed) and shards of given ids.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/data/mlm_masking.h"
#include "experiments/data/token_shards.h"
#include "tests/temp_dir.h"

namespace batchlab::data::testing {

using ScratchDir = test_support::TempDir;

// A fixed vocabulary of 400 made-up words from syllables, drawn with a skewed (Zipf-like)
// distribution so a tokenizer finds frequent pieces as in real text.
inline std::string pseudo_word(SplitMix64& rng) {
  static const char* kSyllables[] = {"ka", "lo", "mi", "ten", "ra",  "su", "vel", "no", "pi", "dor",
                                     "an", "ex", "qu", "is",  "tra", "me", "zo",  "ul", "be", "cy"};
  const uint64_t u = rng.below(1000);
  const uint64_t word = (u * u) / 2500;  // 0..399, small ids far more frequent
  std::string w;
  uint64_t x = word;
  do {
    w += kSyllables[x % 20];
    x /= 20;
  } while (x > 0);
  return w + kSyllables[(word * 7) % 20];
}

inline std::string pseudo_line(SplitMix64& rng) {
  const int words = 4 + static_cast<int>(rng.below(12));
  std::string line;
  for (int i = 0; i < words; ++i) {
    if (i > 0) line += ' ';
    line += pseudo_word(rng);
  }
  return line + ".";
}

// `docs` files doc-NNN.txt of `lines` lines each (a blank line every 5 lines, like paragraphs).
inline std::vector<std::string> write_text_corpus(const std::filesystem::path& dir, int docs,
                                                  int lines, uint64_t seed = 1) {
  std::filesystem::create_directories(dir);
  SplitMix64 rng(seed);
  std::vector<std::string> files;
  for (int d = 0; d < docs; ++d) {
    char name[32];
    std::snprintf(name, sizeof(name), "doc-%03d.txt", d);
    const auto path = (dir / name).string();
    std::ofstream f(path);
    for (int l = 0; l < lines; ++l) {
      f << pseudo_line(rng) << '\n';
      if (l % 5 == 4) f << '\n';
    }
    files.push_back(path);
  }
  return files;
}

// Documents of random ordinary ids in [kFirstOrdinaryId, vocab) with lengths in [min_len, max_len].
inline std::vector<std::vector<int32_t>> random_documents(int docs, int min_len, int max_len,
                                                          int64_t vocab, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(docs));
  for (auto& d : out) {
    const auto len =
        min_len + static_cast<int>(rng.below(static_cast<uint64_t>(max_len - min_len + 1)));
    for (int i = 0; i < len; ++i) {
      d.push_back(5 + static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocab - 5))));
    }
  }
  return out;
}

inline void write_shards(const std::string& dir, const std::vector<std::vector<int32_t>>& docs,
                         int64_t vocab, int64_t shard_bytes) {
  TokenShardWriter w(dir, vocab, shard_bytes);
  for (const auto& d : docs) w.add_document(d);
  w.finish();
}

}  // namespace batchlab::data::testing
