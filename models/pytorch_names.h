// The names of batchlab's networks in PyTorch's ecosystem: the one mapping between a module's own
// state_dict and the state_dict a Python user gives batchlab (model.init_from) and gets back
// (`batchlab export`), for each model.arch.
//
//   ResNets (resnet18..152)  torchvision's names, which models/resnet.h uses already: unchanged.
//   BERT (bert_*)            Hugging Face's BertForPreTraining / BertForMaskedLM names, which
//                            models/bert.h uses, plus what a Hugging Face state_dict lists and
//                            batchlab's module does not hold separately:
//                              cls.predictions.decoder.weight  the MLM decoder, tied to
//                                                              bert.embeddings.word_embeddings.weight
//                              cls.predictions.decoder.bias    tied to cls.predictions.bias
//                              bert.embeddings.position_ids    a constant arange buffer (files
//                                                              from transformers < 4.31)
//                            Export adds the two decoder entries (a strict load_state_dict into a
//                            Hugging Face-structured module needs them); import drops all three,
//                            after checking that the decoder really is tied.
//   GPT-2 (gpt2_*)           Hugging Face's GPT2LMHeadModel names and shapes, which models/gpt2.h
//                            uses (Conv1D weights [in, out], as transformers stores them), plus
//                              lm_head.weight                  the output layer, tied to
//                                                              transformer.wte.weight
//                            Export adds it (last, where GPT2LMHeadModel lists it); import drops
//                            it after checking that it is tied, drops the causal-mask buffers of
//                            older files (h.N.attn.bias, h.N.attn.masked_bias) and prefixes a
//                            GPT2Model file's names (wte.weight, h.0.*: OpenAI's releases) with
//                            "transformer.".
//   Everything else          the module's own names (small_resnet, the CIFAR ResNets).
#pragma once

#include <torch/nn/module.h>

#include <string>

#include "models/state_dict.h"

namespace batchlab::models {

// Whose names `arch` uses: "torchvision" (resnet18..152), "huggingface" (bert_*, gpt2_*) or
// "batchlab" (the rest: no PyTorch counterpart).
std::string pytorch_naming(const std::string& arch);

// Which PyTorch module takes the export of `arch` (`entries`, its to_pytorch_state_dict) with
// load_state_dict(strict=True), and how to build it, read off the tensors themselves: a ResNet
// with the small stem (model.stem; a 3x3 stride-1 conv1 and no max pool) or another number of
// input channels is torchvision's with conv1 (and maxpool) replaced, never torchvision's as is.
struct PytorchModule {
  std::string describe;   // in words, naming the constructor and every replaced layer
  std::string python;     // code building it as `model` (imports included); "" when no library can
  bool promised = false;  // true: a strict load into `python`'s module is what the export promises
};
PytorchModule pytorch_module(const std::string& arch, const StateDict& entries);

// The module's parameters and buffers under PyTorch names for `arch`: what `batchlab export`
// writes.
StateDict to_pytorch_state_dict(const std::string& arch, const torch::nn::Module& model);

// `entries` (read from a PyTorch file named `source`) under the module's names for `arch`: what
// model.init_from loads. Throws InputError naming the file and the tensor when a BERT file's
// decoder is not tied to its token embedding (batchlab's BERT ties them, as BERT does).
StateDict from_pytorch_state_dict(const std::string& arch, StateDict entries,
                                  const std::string& source);

}  // namespace batchlab::models
