// [model]: the network (experiment_config.h describes the config structs as a whole).
#pragma once

#include <cstdint>
#include <string>

namespace batchlab::config {

struct ModelConfig {
  std::string arch = "small_resnet";  // name in the models table (models/registry.h)
  int64_t width = 32;                 // base channel count of the small CNNs
  int64_t num_classes = 0;            // 0: taken from the dataset
  bool zero_init_residual = false;    // last BN gamma of each residual block at 0 (Goyal et al.)
  // ResNet stem: "imagenet" (7x7 stride-2 conv + max pool), "small" (3x3 stride-1 conv, no pool:
  // 28x28 and 32x32 inputs), "auto" (small when the input side is at most 64 pixels).
  std::string stem = "auto";
  bool channels_last = true;  // ResNets on CUDA: NHWC memory format (ignored on CPU)
  // BERT family (ignored by image models).
  int64_t vocab_size =
      30522;  // token vocabulary (BERT's WordPiece size; the tokenizer's when trained)
  int64_t max_seq_len = 512;   // position embeddings
  bool norm_first = false;     // pre-LN blocks (Cramming) instead of post-LN (original BERT)
  bool next_sentence = false;  // next-sentence-prediction head on the pooled [CLS] output
  double dropout = 0.1;        // hidden and attention dropout (Cramming uses 0)
  // Starting weights: a PyTorch state_dict file (torch.save(model.state_dict(), f); torchvision
  // ResNet or Hugging Face BERT names), "" = the architecture's own initialization. Relative paths
  // are relative to the working directory, as data.path. Loaded after the model is built and
  // before training; a resumed run takes its weights from its checkpoint instead.
  std::string init_from;
  // true: every parameter and buffer must be in the file with its shape and nothing else may be
  // (exit 2 listing the differences); false: what matches by name and shape is copied, the rest
  // (a new head) keeps its initialization and is listed at the start of the run.
  bool init_strict = true;
  // SHA-256 of the init_from file, computed when the config is loaded (init_file.h): part of the
  // canonical TOML, so a different file is a different run id. When a config gives it (a sweep's
  // job file), the file must still have that hash.
  std::string init_sha256;
};

}  // namespace batchlab::config
