// batchlab's tokenizer (a SentencePiece unigram model, experiments/data/tokenizer.h) as the files a
// save_pretrained folder holds, so that transformers' AutoTokenizer.from_pretrained(DIR) loads it
// as a fast tokenizer (Hugging Face's tokenizers library) that encodes text to the ids batchlab
// trained on:
//   tokenizer.json           the pipeline SentencePiece runs, in the tokenizers library's terms:
//                            normalizer    the model's own compiled character map (Precompiled;
//                                          nmt_nfkc for batchlab's), then SentencePiece's
//                                          whitespace rules: strip both ends, runs of spaces to one
//                            pre-tokenizer Metaspace: spaces to U+2581, one prepended
//                            (SentencePiece's
//                                          dummy prefix)
//                            model         Unigram with every piece's score, [UNK] = 1 and byte
//                                          fallback (characters no piece covers become <0xNN>)
//                            post-processor [CLS] A [SEP] and [CLS] A [SEP] B [SEP] (segments 0/1)
//                            decoder       the inverse: bytes fused, U+2581 back to spaces
//   tokenizer_config.json    the special tokens ([PAD] [UNK] [CLS] [SEP] [MASK] = 0..4) and the
//                            longest input (model.max_seq_len)
//   special_tokens_map.json  the same special tokens, for older readers
//
// Where transformers and batchlab can differ (docs/huggingface.md, "Tokenizer"): transformers
// recognises the special tokens' literal text ("[MASK]" typed in a sentence becomes id 4), which
// batchlab's SentencePiece never does; a piece's text such as "<0x41>" typed literally may be read
// as that byte piece. Ordinary text encodes to the same ids (tests/cli/hf_interchange.py checks it
// on the Python documentation).
#pragma once

#include <cstdint>
#include <string>

#include "experiments/data/sentencepiece_model_file.h"

namespace batchlab::data {

struct HfTokenizerFiles {
  std::string tokenizer_json;
  std::string tokenizer_config_json;
  std::string special_tokens_map_json;
};

// The three files for `model` (read from `source`, named in errors), accepting inputs of up to
// `max_length` tokens. Throws InputError naming `source` for what tokenizers cannot reproduce: a
// model that is not unigram (SentencePiece BPE ranks merges by score, which a tokenizers BPE
// model does not take), or whose whitespace is not escaped.
HfTokenizerFiles hf_tokenizer_files(const SentencePieceModelFile& model, const std::string& source,
                                    int64_t max_length);

}  // namespace batchlab::data
