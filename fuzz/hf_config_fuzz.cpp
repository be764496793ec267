// A save_pretrained folder's config.json, compared with the experiment's BERT
// (models/hf_bert_config.h).
#include "core/config/model_config.h"
#include "fuzz/fuzz_support.h"
#include "models/bert_config.h"
#include "models/hf_bert_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  static const models::BertConfig bert = [] {
    config::ModelConfig model;
    model.arch = "bert_tiny";
    model.vocab_size = 2048;
    model.max_seq_len = 64;
    return models::bert_config_from(model);
  }();
  const std::string path = fuzz::write_file("config.json", fuzz::as_text(data, size));
  fuzz::refuse_only_as_input_error([&] { models::hf_bert_config_differences(path, bert); });
  return 0;
}
