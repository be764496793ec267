// The weights half of `batchlab export`: which checkpoint file a run's `--checkpoint` names, and
// the run's model rebuilt as training built it, loaded from that file and turned into a PyTorch
// state_dict under PyTorch names (models/pytorch_names.h): torchvision's for the ResNets, Hugging
// Face's for BERT, with the module that takes it (torchvision's ResNet with conv1 and maxpool
// replaced for the small stem). Python reads the file with torch.load and load_state_dict(strict=
// True) into that module.
//
// Three formats (--format): a torch.save file (pt), a .safetensors file (safetensors; the same
// names and tensors, models/safetensors.h), and for BERT a Hugging Face save_pretrained folder
// (hf): config.json (models/hf_bert_config.h), model.safetensors under the names save_pretrained
// writes (the tied decoder left out, as transformers leaves it out) and the run's tokenizer as
// tokenizer.json and its configs (experiments/data/hf_tokenizer_files.h).
//
// The model is rebuilt through the task factory, as `batchlab train` builds it, so its input size
// and number of classes (or the tokenizer's vocabulary) come from the run's data set: export reads
// the data set the run trained on (its sizes, not its examples' order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/experiment_config.h"
#include "core/train/checkpoint.h"
#include "models/pytorch_names.h"

namespace batchlab::experiments {

// The file `which` names among run `run_id`'s checkpoints in `dir`: "final" (the newest checkpoint:
// the final weights of a run that finished with checkpoints on), "best" (best.pt, kept for runs
// with a validation split, core/train/best_weights.h) or a step number (a kept checkpoint; the two
// newest are kept). InputError saying why there is none and what to do: an empty folder, a step
// not kept (listing those that are), best without a validation split or without best.pt.
std::string choose_checkpoint(const std::string& dir, const std::string& which,
                              const config::ExperimentConfig& config, const std::string& run_id);

enum class ExportFormat { pytorch, safetensors, huggingface };

// --format as given ("pt", "safetensors", "hf"), or, when "", the one `out`'s extension names
// (.safetensors: safetensors; anything else: pt). InputError for another word.
ExportFormat export_format(const std::string& format, const std::string& out);

// One file of an export: its name inside the --out folder (hf) or "" (the file --out names).
struct ExportedFile {
  std::string name;
  std::string bytes;
};

struct ExportedWeights {
  int64_t step = 0;                       // updates done when the checkpoint was written
  int64_t tensors = 0;                    // entries in the state_dict
  std::string names;                      // "torchvision", "huggingface" or "batchlab"
  std::optional<train::BestRecord> best;  // when the file was best.pt
  models::PytorchModule module;           // which PyTorch module takes them, and how to build it
  std::vector<ExportedFile> files;        // what to write, in the chosen format
};

// Rebuilds run `run_id`'s model from `config` on the CPU (model.init_from is not read: the weights
// come from the checkpoint), loads `checkpoint_file` (a CheckpointError when it is another run's
// or damaged) and returns its state_dict under PyTorch names as the files of `format`. hf is for
// BERT runs with post-LN blocks (model.norm_first = false: Hugging Face's BertModel is post-LN)
// whose tokenizer is a SentencePiece unigram model; anything else is an InputError saying why.
// Writes nothing: the caller writes the files and the card together (core/atomic_file.h).
ExportedWeights export_weights(const config::ExperimentConfig& config, const std::string& run_id,
                               const std::string& checkpoint_file, ExportFormat format);

}  // namespace batchlab::experiments
