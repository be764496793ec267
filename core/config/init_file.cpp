#include "core/config/init_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include "core/config/canonical.h"
#include "core/config/sha256.h"

namespace batchlab::config {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSaveHint =
    "give the path of a PyTorch state_dict file (torch.save(model.state_dict(), f)), a "
    ".safetensors file or a Hugging Face save_pretrained folder, relative to the working "
    "directory, or \"\" to start from the architecture's initialization";

struct Remembered {
  uintmax_t size = 0;
  fs::file_time_type modified;
  std::string sha256;
};

std::string hash_bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  }
  Sha256 hasher;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    hasher.update(std::string_view(chunk.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) throw InputError(fmt::format("{}: read error", path));
  return to_hex(hasher.digest());
}

Diagnostic problem(const std::string& key, const std::string& value, std::string rule) {
  Diagnostic d;
  d.key = key;
  d.value = format_string(value);
  d.rule = std::move(rule);
  return d;
}

// A folder's identity: the hashes of the files read from it, with their names, hashed together.
std::string folder_sha256(const HfFolderFiles& files) {
  Sha256 hasher;
  for (const auto& file : {files.config, files.weights}) {
    hasher.update(fs::path(file).filename().string() + " " + file_sha256(file) + "\n");
  }
  return to_hex(hasher.digest());
}

// The init_from folder's problem, or "" when it holds what batchlab reads.
std::string folder_problem(const HfFolderFiles& files) {
  std::error_code ec;
  if (!fs::is_regular_file(files.config, ec)) {
    return fmt::format(
        "a folder without config.json: model.init_from takes a Hugging Face save_pretrained "
        "folder (config.json and model.safetensors) or a weights file; {}",
        kSaveHint);
  }
  if (files.weights.empty()) {
    return "the folder has config.json but neither model.safetensors nor pytorch_model.bin (a "
           "model saved with save_pretrained has one of them; a sharded save, "
           "model.safetensors.index.json, is not read: save with a larger max_shard_size)";
  }
  return "";
}

}  // namespace

HfFolderFiles hf_folder_files(const std::string& dir) {
  HfFolderFiles files;
  files.config = (fs::path(dir) / "config.json").string();
  std::error_code ec;
  for (const char* name : {"model.safetensors", "pytorch_model.bin"}) {
    const auto candidate = (fs::path(dir) / name).string();
    if (fs::is_regular_file(candidate, ec)) {
      files.weights = candidate;
      break;
    }
  }
  return files;
}

std::string file_sha256(const std::string& path) {
  // Sweep expansion parses jobs on several threads: the memo is shared.
  static std::mutex mutex;
  static std::map<std::string, Remembered> memo;
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  const auto modified = fs::last_write_time(path, ec);
  if (ec) throw InputError(fmt::format("{}: cannot be read: {}", path, ec.message()));
  const std::string key = fs::absolute(path, ec).lexically_normal().string();
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = memo.find(key);
    if (it != memo.end() && it->second.size == size && it->second.modified == modified) {
      return it->second.sha256;
    }
  }
  std::string sha = hash_bytes_of(path);
  // Modification times tick coarsely (milliseconds): a file written just now may be rewritten
  // with the same size and time, so only a file left alone for a while is remembered (git's
  // "racily clean" rule).
  if (fs::file_time_type::clock::now() - modified > std::chrono::seconds(2)) {
    std::lock_guard<std::mutex> lock(mutex);
    memo[key] = {size, modified, sha};
  }
  return sha;
}

void resolve_init_file(ModelConfig& model, bool read_file, std::vector<Diagnostic>& out) {
  if (model.init_from.empty()) {
    if (!model.init_sha256.empty()) {
      out.push_back(problem("model.init_sha256", model.init_sha256,
                            "only means something beside model.init_from (batchlab writes it "
                            "there); remove it"));
    }
    return;
  }
  if (!read_file) return;
  const std::string& path = model.init_from;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    out.push_back(problem("model.init_from", path, std::string("no such file; ") + kSaveHint));
    return;
  }
  const bool folder = fs::is_directory(path, ec);
  if (folder) {
    if (const auto why = folder_problem(hf_folder_files(path)); !why.empty()) {
      out.push_back(problem("model.init_from", path, why));
      return;
    }
  } else if (!fs::is_regular_file(path, ec)) {
    out.push_back(problem("model.init_from", path, std::string("not a file; ") + kSaveHint));
    return;
  }
  std::string sha;
  try {
    sha = folder ? folder_sha256(hf_folder_files(path)) : file_sha256(path);
  } catch (const InputError& e) {
    out.push_back(problem("model.init_from", path,
                          fmt::format("{}; check the file's permissions", e.what())));
    return;
  }
  if (!model.init_sha256.empty() && model.init_sha256 != sha) {
    out.push_back(problem(
        "model.init_sha256", model.init_sha256,
        fmt::format("model.init_from = \"{}\" now has SHA-256 {}: the file changed after this "
                    "configuration was written (a sweep plans its jobs with the file's hash). "
                    "Restore the file, or remove init_sha256 to start a new run (a new run id) "
                    "from the file as it is",
                    path, sha)));
    return;
  }
  model.init_sha256 = sha;
}

}  // namespace batchlab::config
