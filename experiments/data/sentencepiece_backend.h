// The one door to libsentencepiece.
//
// Debian's libsentencepiece bundles its own protobuf-lite and exports those symbols; LibTorch
// loads libprotobuf, and with both in the global symbol scope protobuf's start-up code runs
// SentencePiece's copies and crashes before main(). So no batchlab target links SentencePiece:
// the module libbatchlab_sentencepiece.so (sentencepiece_module.cc, built next to the batchlab
// executable) does, and make_sentencepiece_backend() dlopen()s it with RTLD_LOCAL (its symbols
// stay out of the global scope) and RTLD_DEEPBIND (SentencePiece binds to its own protobuf first;
// not under AddressSanitizer, which refuses it: the fuzzing build's text harness has no LibTorch).
// The module is found at $BATCHLAB_SENTENCEPIECE_MODULE, next to the running executable or one
// directory up (test binaries live in build/tests), or at the path it was built at.
//
// Errors cross the boundary as strings ("" = success); the Tokenizer turns them into exceptions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab::data {

class SentencePieceBackend {
 public:
  virtual ~SentencePieceBackend() = default;

  // SentencePieceTrainer::Train with `args` (its flag names, e.g. model_prefix, vocab_size) on the
  // non-empty lines of `files`, after seeding SentencePiece's random generator with `seed`.
  virtual std::string train(const std::map<std::string, std::string>& args,
                            const std::vector<std::string>& files, uint32_t seed) = 0;

  virtual std::string load(const std::string& model_path) = 0;
  virtual std::string encode(std::string_view text, std::vector<int>* ids) const = 0;
  virtual std::string decode(const std::vector<int>& ids, std::string* text) const = 0;
  virtual int piece_size() const = 0;
  virtual int piece_to_id(const std::string& piece) const = 0;  // the unknown id when absent
  virtual std::string id_to_piece(int id) const = 0;
};

// A fresh backend from the module (loaded once per process). Throws Error naming the paths
// tried when the module cannot be loaded.
std::unique_ptr<SentencePieceBackend> make_sentencepiece_backend();

}  // namespace batchlab::data

// The module's factory (resolved by name with dlsym).
extern "C" batchlab::data::SentencePieceBackend* batchlab_sentencepiece_create();
