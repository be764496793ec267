#include "models/state_dict.h"

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include "core/atomic_file.h"
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

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string format_name_list(const std::vector<std::string>& names, size_t limit) {
  std::vector<std::string> shown(
      names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(limit, names.size())));
  std::string text = fmt::format("{}", fmt::join(shown, ", "));
  if (names.size() > limit) text += fmt::format(", ... ({} more)", names.size() - limit);
  return text;
}

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
      const std::string key =
          item.key().isString() ? "'" + item.key().toStringRef() + "'" : item.key().tagKind();
      throw InputError(fmt::format(
          "{}: entry {} is not a name -> tensor pair (key {}, value {}); a state_dict maps "
          "parameter names to tensors. A training checkpoint that holds the state_dict under a "
          "key needs saving on its own: torch.save(checkpoint[{}], f)",
          path, out.size(), key, item.value().tagKind(), key));
    }
    out.emplace_back(item.key().toStringRef(), item.value().toTensor());
  }
  return out;
}

std::vector<char> state_dict_bytes(const StateDict& entries) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, tensor] : entries) dict.insert(name, tensor.detach().cpu());
  // torch::pickle_save's Pickler tags every dict with its element types through a call of
  // torch.jit._pickle.restore_type_tag, a global that Python's torch.load refuses since PyTorch
  // 2.6 made weights_only=True its default. Without the tag the archive is what torch.save of a
  // plain dict writes, and torch.load(f) reads it as it is (tests/cli/export_cli_test.cpp).
  std::vector<char> pickled;
  torch::jit::Pickler pickler(
      [&](const char* bytes, size_t n) { pickled.insert(pickled.end(), bytes, bytes + n); },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
      /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(dict);
  pickler.stop();
  std::vector<char> archive;
  {
    // The writer finishes the zip (its central directory) when it goes out of scope.
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t n) {
      const char* p = static_cast<const char*>(bytes);
      archive.insert(archive.end(), p, p + n);
      return n;
    });
    torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(),
                                       writer);
  }
  return archive;
}

void write_state_dict(const StateDict& entries, const std::string& path) {
  const std::vector<char> bytes = state_dict_bytes(entries);
  write_file_atomically(path, std::string_view(bytes.data(), bytes.size()));
}

void save_state_dict(const torch::nn::Module& module, const std::string& path) {
  write_state_dict(state_dict(module), path);
}

namespace {

bool is_batch_counter(const std::string& name) {
  return ends_with(name, ".num_batches_tracked") || name == "num_batches_tracked";
}

// The module's entries against `entries`: the fit, and for every module entry the file's tensor
// of the same name and shape (null when there is none).
struct Matching {
  StateDictFit fit;
  StateDict targets;                            // the module's state_dict, in module order
  std::vector<const torch::Tensor*> sources;    // per target: the matching file tensor, or null
  std::vector<torch::Tensor> counters_to_zero;  // batch counters the file lacks
};

Matching match(const torch::nn::Module& module, const StateDict& entries) {
  Matching m;
  m.targets = state_dict(module);
  std::unordered_map<std::string, const torch::Tensor*> given;
  for (const auto& [name, tensor] : entries) given.emplace(name, &tensor);
  std::unordered_map<std::string, bool> known;
  for (const auto& [name, tensor] : m.targets) known.emplace(name, true);
  for (const auto& [name, target] : m.targets) {
    const auto it = given.find(name);
    const torch::Tensor* source = nullptr;
    if (it == given.end()) {
      if (is_batch_counter(name)) {
        m.counters_to_zero.push_back(target);
      } else {
        m.fit.missing.push_back(name);
      }
    } else if (it->second->sizes() != target.sizes()) {
      m.fit.mismatched.push_back(fmt::format("{} (file [{}], model [{}])", name,
                                             fmt::join(it->second->sizes(), ", "),
                                             fmt::join(target.sizes(), ", ")));
    } else {
      source = it->second;
    }
    m.sources.push_back(source);
  }
  for (const auto& [name, tensor] : entries) {
    if (known.count(name) == 0) m.fit.unexpected.push_back(name);
  }
  return m;
}

// Copies the matched tensors (converted to each target's dtype and device) into the module.
void copy_matched(const Matching& m) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < m.targets.size(); ++i) {
    if (m.sources[i] == nullptr) continue;
    // copy_ on the detached alias writes into the parameter's own storage.
    torch::Tensor dst = m.targets[i].second;
    dst.copy_(*m.sources[i]);
  }
  for (auto counter : m.counters_to_zero) counter.zero_();
}

}  // namespace

void load_state_dict(torch::nn::Module& module, const StateDict& entries,
                     const std::string& source) {
  const Matching m = match(module, entries);
  const StateDictFit& fit = m.fit;
  if (!fit.exact()) {
    std::vector<std::string> parts;
    if (!fit.missing.empty()) {
      parts.push_back(
          fmt::format("missing keys ({}): {}", fit.missing.size(), format_name_list(fit.missing)));
    }
    if (!fit.unexpected.empty()) {
      parts.push_back(fmt::format("unexpected keys ({}): {}", fit.unexpected.size(),
                                  format_name_list(fit.unexpected)));
    }
    if (!fit.mismatched.empty()) {
      parts.push_back(fmt::format("shape mismatches ({}): {}", fit.mismatched.size(),
                                  format_name_list(fit.mismatched)));
    }
    throw InputError(fmt::format(
        "{}: the state_dict does not fit the model ({} parameters and buffers): {}; is it the "
        "same architecture (model.arch, model.stem, number of classes)?",
        source, m.targets.size(), fmt::join(parts, "; ")));
  }
  copy_matched(m);
}

StateDictFit load_matching_state_dict(torch::nn::Module& module, const StateDict& entries) {
  Matching m = match(module, entries);
  copy_matched(m);
  return std::move(m.fit);
}

void load_state_dict(torch::nn::Module& module, const std::string& path) {
  load_state_dict(module, read_state_dict(path), path);
}

}  // namespace batchlab::models
