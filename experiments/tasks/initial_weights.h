// model.init_from: a run's starting weights, read from a PyTorch state_dict file (torch.save or
// .safetensors, models/safetensors.h; torchvision or Hugging Face names, models/pytorch_names.h)
// or a Hugging Face save_pretrained folder of a BERT (its config.json checked against the
// experiment's network, models/hf_bert_config.h) into the network the task factory just built,
// before the trainer and its optimizer exist. A resumed run loads them too and then takes its
// weights from its checkpoint, which the trainer reads afterwards.
//
// The config loader has already checked that the file exists and recorded its SHA-256
// (core/config/init_file.h); what is checked here needs the tensors.
#pragma once

#include <torch/nn/module.h>

#include <string>
#include <vector>

#include "core/config/model_config.h"

namespace batchlab::experiments {

// Loads model.init_from into `model` (nothing when it is ""). With model.init_strict, every
// parameter and buffer must come from the file with its shape and nothing may be left over:
// otherwise an InputError names the file and lists the missing, unexpected and mis-shaped tensors,
// and nothing is copied. Without it, the tensors that match by name and shape are copied and the
// others keep their initialization. Either way, a file that is no state_dict (not a torch.save
// archive, truncated, a TorchScript archive, a pickled list, a malformed safetensors file) is an
// InputError naming it and what is wrong, and so is a folder whose config.json describes another
// network (every difference listed).
// Returns what the run should tell the user: how many tensors came from the file and, when not
// strict, which parameters were left at their initialization and which file entries were ignored.
std::vector<std::string> load_initial_weights(torch::nn::Module& model,
                                              const config::ModelConfig& config);

}  // namespace batchlab::experiments
