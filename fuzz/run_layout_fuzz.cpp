// The files of a sweep's runs folder that sweeps/run_layout.h reads back (a shared folder that
// other processes, users and damaged copies write too): the text a lock's holder recorded
// (lock_description: `sweep status`, the coordinator's "held by" messages, also as JSON) and a
// run's config.toml (write_config keeps a file that already holds the canonical TOML, and replaces
// anything else). The input is 2 bytes (little-endian) of the lock file's length, the lock file,
// then the config.toml found in the run folder. Checked: lock_description never throws and returns
// at most kMaxLockDescription + 3 printable ASCII bytes; after write_config the file holds exactly
// the canonical TOML.
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "sweeps/run_layout.h"

namespace {

constexpr const char* kCanonical = "schema_version = 1\n\n[model]\narch = \"mlp\"\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  std::string_view input = fuzz::as_text(data, size);
  if (input.size() < 2) return 0;
  const size_t lock_bytes = static_cast<uint8_t>(input[0]) | (static_cast<uint8_t>(input[1]) << 8);
  input.remove_prefix(2);
  const std::string_view lock = input.substr(0, lock_bytes);
  input.remove_prefix(lock.size());

  const std::string lock_path = fuzz::write_file("coordinator.lock", lock);
  const std::string text = sweeps::lock_description(lock_path);
  if (text.size() > sweeps::kMaxLockDescription + 3) std::abort();
  for (const char c : text) {
    if (!std::isprint(static_cast<unsigned char>(c))) std::abort();
  }

  const sweeps::RunLayout layout(fuzz::scratch_dir().string());
  std::filesystem::create_directories(layout.dir("run1"));
  fuzz::write_file("run1/config.toml", input);
  layout.write_config("run1", kCanonical);
  std::ifstream in(layout.config_path("run1"), std::ios::binary);
  const std::string written{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (written != kCanonical) std::abort();
  return 0;
}
