#include "models/state_dict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include "core/errors.h"
#include "models/state_dict_pickle.h"

namespace batchlab::models {
namespace {

void append_entries(const torch::nn::Module& module, const std::string& prefix, StateDict& out) {
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    out.emplace_back(prefix + p.key(), p.value().detach());
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false)) {
    out.emplace_back(prefix + b.key(), b.value().detach());
  }
  for (const auto& child : module.named_children()) {
    append_entries(*child.value(), prefix + child.key() + ".", out);
  }
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(
        fmt::format("{}: cannot open the state_dict file: {}", path, std::strerror(errno)));
  }
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The first `limit` names, then how many more there are.
std::string name_list(const std::vector<std::string>& names, size_t limit = 25) {
  std::vector<std::string> shown(
      names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(limit, names.size())));
  std::string text = fmt::format("{}", fmt::join(shown, ", "));
  if (names.size() > limit) text += fmt::format(", ... ({} more)", names.size() - limit);
  return text;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

StateDict state_dict(const torch::nn::Module& module) {
  StateDict out;
  append_entries(module, "", out);
  return out;
}

StateDict read_state_dict(const std::string& path) {
  const std::vector<char> archive = make_loadable_by_libtorch(read_bytes(path), path);
  torch::IValue value;
  try {
    value = torch::pickle_load(archive);
  } catch (const c10::Error& e) {
    throw InputError(
        fmt::format("{}: cannot read the state_dict: {}", path, e.what_without_backtrace()));
  }
  // A Python state_dict comes back as (entries, attributes); a plain dict as itself.
  if (value.isTuple() && !value.toTupleRef().elements().empty()) {
    value = value.toTupleRef().elements()[0];
  }
  if (!value.isGenericDict()) {
    throw InputError(
        fmt::format("{}: holds a {}, not a state_dict (a mapping from names to "
                    "tensors, as torch.save(model.state_dict(), f) writes)",
                    path, value.tagKind()));
  }
  StateDict out;
  for (const auto& item : value.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor()) {
      throw InputError(fmt::format(
          "{}: entry {} is not a name -> tensor pair (key {}, value {}); a state_dict maps "
          "parameter names to tensors",
          path, out.size(), item.key().tagKind(), item.value().tagKind()));
    }
    out.emplace_back(item.key().toStringRef(), item.value().toTensor());
  }
  return out;
}

void write_state_dict(const StateDict& entries, const std::string& path) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, tensor] : entries) dict.insert(name, tensor.detach().cpu());
  const std::vector<char> bytes = torch::pickle_save(dict);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      throw InputError(
          fmt::format("{}: cannot write the state_dict: {}", tmp, std::strerror(errno)));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    throw InputError(fmt::format("{}: cannot write the state_dict: {}", path, ec.message()));
  }
}

void save_state_dict(const torch::nn::Module& module, const std::string& path) {
  write_state_dict(state_dict(module), path);
}

void load_state_dict(torch::nn::Module& module, const StateDict& entries,
                     const std::string& source) {
  const StateDict targets = state_dict(module);
  std::unordered_map<std::string, const torch::Tensor*> given;
  for (const auto& [name, tensor] : entries) given.emplace(name, &tensor);
  std::unordered_map<std::string, bool> known;
  for (const auto& [name, tensor] : targets) known.emplace(name, true);

  std::vector<std::string> missing;
  std::vector<std::string> mismatched;
  std::vector<std::string> unexpected;
  std::vector<torch::Tensor> reset_counters;
  for (const auto& [name, target] : targets) {
    const auto it = given.find(name);
    if (it == given.end()) {
      if (ends_with(name, ".num_batches_tracked") || name == "num_batches_tracked") {
        reset_counters.push_back(target);
      } else {
        missing.push_back(name);
      }
    } else if (it->second->sizes() != target.sizes()) {
      mismatched.push_back(fmt::format("{} (file [{}], model [{}])", name,
                                       fmt::join(it->second->sizes(), ", "),
                                       fmt::join(target.sizes(), ", ")));
    }
  }
  for (const auto& [name, tensor] : entries) {
    if (known.count(name) == 0) unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::vector<std::string> parts;
    if (!missing.empty()) {
      parts.push_back(fmt::format("missing keys ({}): {}", missing.size(), name_list(missing)));
    }
    if (!unexpected.empty()) {
      parts.push_back(
          fmt::format("unexpected keys ({}): {}", unexpected.size(), name_list(unexpected)));
    }
    if (!mismatched.empty()) {
      parts.push_back(
          fmt::format("shape mismatches ({}): {}", mismatched.size(), name_list(mismatched)));
    }
    throw InputError(fmt::format(
        "{}: the state_dict does not fit the model ({} parameters and buffers): {}; is it the "
        "same architecture (model.arch, model.stem, number of classes)?",
        source, targets.size(), fmt::join(parts, "; ")));
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, target] : targets) {
    const auto it = given.find(name);
    if (it != given.end()) {
      // copy_ on the detached alias writes into the parameter's own storage.
      torch::Tensor dst = target;
      dst.copy_(*it->second);
    }
  }
  for (auto& counter : reset_counters) counter.zero_();
}

void load_state_dict(torch::nn::Module& module, const std::string& path) {
  load_state_dict(module, read_state_dict(path), path);
}

}  // namespace batchlab::models
