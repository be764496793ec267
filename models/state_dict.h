// PyTorch state_dict interchange: parameters and buffers by name, in the file format of Python's
// `torch.save(model.state_dict(), f)` (a zip archive holding a pickle program and the raw tensor
// storages). A torchvision ResNet's state_dict loads into models/resnet.h's ResNet by name, and a
// batchlab network's state_dict written here loads in Python with `torch.load(f)` and
// `model.load_state_dict(...)`.
//
// Reading goes through `torch::pickle_load`, after models/state_dict_pickle.h has rewritten the two
// constructs of a Python state_dict pickle that LibTorch 1.13's unpickler cannot read (the
// OrderedDict and its `_metadata`). The file must be in torch.save's default zip format (PyTorch
// >= 1.6); files in the legacy format (old torchvision weight downloads) need one
// `torch.save(torch.load(old), new)` in Python first.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

namespace batchlab::models {

// Name -> tensor, in file (or module) order.
using StateDict = std::vector<std::pair<std::string, torch::Tensor>>;

// The module's parameters and buffers (running_mean, running_var, num_batches_tracked), detached,
// in the order torch.nn.Module.state_dict() lists them: a module's own parameters, then its own
// buffers, then each child's entries under "child." in registration order.
StateDict state_dict(const torch::nn::Module& module);

// Reads a file written by torch.save(state_dict, path) in Python, or by write_state_dict. Throws
// InputError naming `path` when it is missing, empty, truncated, a TorchScript archive
// (torch.jit.save), in torch.save's legacy (non-zip) format, not a torch.save archive at all, or
// not a mapping from names to tensors (a pickled list, a training checkpoint holding the
// state_dict under a key).
StateDict read_state_dict(const std::string& path);

// The bytes of `entries` as torch.save of a plain name -> tensor dict writes them: Python's
// torch.load reads them with its default weights_only=True (no TorchScript type tags), and
// torchvision's load_state_dict accepts the result.
std::vector<char> state_dict_bytes(const StateDict& entries);

// Writes state_dict_bytes(entries) to `path` atomically (core/atomic_file.h: a temporary beside it,
// renamed; nothing is left behind when the write fails). Throws InputError when the path cannot
// take a file, Error when the write itself fails (no space left).
void write_state_dict(const StateDict& entries, const std::string& path);

// write_state_dict(state_dict(module), path).
void save_state_dict(const torch::nn::Module& module, const std::string& path);

// Copies `entries` into the module's parameters and buffers by name (values converted to each
// target's dtype and device), the way Python's strict load_state_dict does. Every parameter and
// buffer must be present with the same shape and no entry may be left over; otherwise nothing is
// copied and an InputError naming `source` lists the missing keys, the unexpected keys and the
// shape mismatches. One exception, as in PyTorch: a missing BatchNorm `num_batches_tracked` (files
// saved before PyTorch 0.4.1) is set to 0.
void load_state_dict(torch::nn::Module& module, const StateDict& entries,
                     const std::string& source);

// load_state_dict(module, read_state_dict(path), path).
void load_state_dict(torch::nn::Module& module, const std::string& path);

// The first `limit` names, then how many more there are: "a, b, c, ... (7 more)".
std::string format_name_list(const std::vector<std::string>& names, size_t limit = 25);

// How a state_dict and a module differ, by name.
struct StateDictFit {
  std::vector<std::string> missing;     // the module's entries the state_dict lacks
  std::vector<std::string> unexpected;  // the state_dict's entries the module lacks
  // Entries of both with different shapes, as "name (file [a, b], model [c, d])".
  std::vector<std::string> mismatched;
  bool exact() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
};

// The non-strict load (Python's load_state_dict(strict=False), but shape mismatches are skipped
// rather than errors): copies every entry whose name and shape match the module's, leaves every
// other parameter and buffer as it was, and returns what did not match. A missing BatchNorm
// `num_batches_tracked` is set to 0 and not listed, as in load_state_dict.
StateDictFit load_matching_state_dict(torch::nn::Module& module, const StateDict& entries);

}  // namespace batchlab::models
