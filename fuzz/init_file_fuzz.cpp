// model.init_from and model.init_sha256 (core/config/init_file.h): the file or save_pretrained
// folder a run starts from is checked and hashed, or compared with the hash a job file recorded
// at planning time. The weights' contents are other harnesses' (safetensors, state_dict,
// hf_config); here the inputs are what the loader itself decides on: the recorded hash and what
// lies at the path.
//
// Input: the first line is model.init_sha256 as a job file would hold it (any bytes); the next
// byte says what init_from names: 'f' a file holding the rest; 'd' a folder with config.json (the
// rest up to the first empty line) and model.safetensors (what follows it), 'b' the same with
// pytorch_model.bin, 'c' a folder with config.json only, 'w' a folder with model.safetensors
// only; 'e' no init_from at all; anything else a path where nothing is. Both outcomes are
// checked: diagnostics that format (the ConfigError the loader throws, exit 2), or a 64-digit
// lower-case hex SHA-256 recorded.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/init_file.h"
#include "fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void write(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  batchlab::fuzz::write_file(fs::relative(path, batchlab::fuzz::scratch_dir()).string(), bytes);
}

// Lays out what init_from names under a fresh folder; returns the path for init_from.
std::string lay_out(char kind, std::string_view rest) {
  const fs::path root = batchlab::fuzz::scratch_dir() / "init";
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root);
  const size_t blank = rest.find("\n\n");
  const std::string_view config = rest.substr(0, blank);
  const std::string_view weights =
      blank == std::string_view::npos ? std::string_view() : rest.substr(blank + 2);
  switch (kind) {
    case 'f':
      write(root / "weights.pt", rest);
      return (root / "weights.pt").string();
    case 'd':
    case 'b':
      write(root / "hf" / "config.json", config);
      write(root / "hf" / (kind == 'd' ? "model.safetensors" : "pytorch_model.bin"), weights);
      return (root / "hf").string();
    case 'c':
      write(root / "hf" / "config.json", config);
      return (root / "hf").string();
    case 'w':
      write(root / "hf" / "model.safetensors", rest);
      return (root / "hf").string();
    case 'e':
      return "";
    default:
      return (root / "missing.pt").string();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  std::string_view input = fuzz::as_text(data, size);
  const size_t eol = input.find('\n');
  const std::string recorded(input.substr(0, eol));
  std::string_view rest = eol == std::string_view::npos ? "" : input.substr(eol + 1);
  const char kind = rest.empty() ? 'e' : rest.front();
  if (!rest.empty()) rest.remove_prefix(1);

  config::ModelConfig model;
  model.init_from = lay_out(kind, rest);
  model.init_sha256 = recorded;
  std::vector<Diagnostic> problems;
  fuzz::refuse_only_as_input_error([&] { config::resolve_init_file(model, true, problems); });
  if (!problems.empty()) {
    const ConfigError error(problems);  // what the loader throws: every diagnostic formatted
    if (std::string_view(error.what()).empty()) std::abort();
  } else if (!model.init_from.empty() && !is_sha256_hex(model.init_sha256)) {
    std::abort();  // accepted, so the run id must hold the file's hash
  }
  // Exporting a recorded run checks only the rules that need no file.
  std::vector<Diagnostic> without_file;
  model.init_sha256 = recorded;
  fuzz::refuse_only_as_input_error([&] { config::resolve_init_file(model, false, without_file); });
  return 0;
}
