// A raw text corpus for BERT pretraining (data.path of dataset "text", or `batchlab data
// pack-text`; experiments/data/text_corpus.h): the input is one document (a .rst file), listed,
// read line by line, encoded by SentencePiece (any bytes: invalid UTF-8, NULs, lines of any
// length), packed into token shards, and read back. The tokenizer is trained once per process on
// generated words (a few seconds), so no model file is committed beside the harness.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "experiments/data/text_corpus.h"
#include "experiments/data/token_shards.h"
#include "experiments/data/tokenizer.h"
#include "fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;

// Lines of made-up words from syllables (a fixed generator), enough text for 400 pieces.
void write_training_text(const fs::path& path) {
  static const char* kSyllables[] = {"ka", "lo",  "mi", "ten", "ra", "su", "vel", "no",
                                     "pi", "dor", "an", "ex",  "qu", "is", "tra", "me"};
  std::ofstream out(path);
  uint64_t state = 12345;
  for (int line = 0; line < 2000; ++line) {
    for (int word = 0; word < 8; ++word) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const uint64_t w = (state >> 33) % 200;
      out << kSyllables[w % 16] << kSyllables[(w / 16) % 16] << (word == 7 ? ".\n" : " ");
    }
  }
}

const batchlab::data::Tokenizer& tokenizer() {
  static const auto tok = [] {
    const fs::path dir = batchlab::fuzz::scratch_dir() / "tokenizer";
    fs::create_directories(dir);
    write_training_text(dir / "words.txt");
    batchlab::data::TokenizerTrainOptions options;
    options.vocab_size = 400;  // byte fallback alone takes 256 pieces
    options.threads = 1;
    batchlab::data::train_tokenizer({(dir / "words.txt").string()}, (dir / "tok").string(),
                                    options);
    return std::make_unique<batchlab::data::Tokenizer>(
        batchlab::data::Tokenizer::load((dir / "tok.model").string()));
  }();
  return *tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  const auto& tok = tokenizer();
  const fs::path texts = fuzz::scratch_dir() / "texts", packed = fuzz::scratch_dir() / "packed";
  std::error_code ec;
  fs::remove_all(packed, ec);
  fs::create_directories(texts);
  fuzz::write_file("texts/document.rst", fuzz::as_text(data, size));
  fuzz::refuse_only_as_input_error([&] {
    data::PackTextOptions options;
    options.threads = 1;
    options.shard_bytes = 4096;  // several shards from one long document
    data::pack_text(data::list_text_files({texts.string()}), tok, packed.string(), options);
    const auto shards = data::TokenShards::open(packed.string());
    for (int64_t d = 0; d < shards->num_documents(); ++d) shards->document(d);
  });
  return 0;
}
