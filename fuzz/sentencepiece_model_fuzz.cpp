// A SentencePiece .model file (data.tokenizer, export --format hf):
// experiments/data/sentencepiece_model_file.h reads its protobuf wire format itself.
#include "experiments/data/sentencepiece_model_file.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  const std::string path = fuzz::write_file("input.model", fuzz::as_text(data, size));
  fuzz::refuse_only_as_input_error([&] { data::read_sentencepiece_model_file(path); });
  return 0;
}
