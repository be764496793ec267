// What every harness shares: a scratch folder of its own for parsers that take a path, and the one
// rule a harness checks beyond the sanitizers: a parser of a user's file ends in a result or in
// batchlab::InputError (exit 2 from the CLI), never in another exception, a crash, a hang or
// unbounded memory.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/errors.h"

namespace batchlab::fuzz {

// A folder for this process's inputs (libFuzzer runs one input at a time per process), removed at
// exit.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("batchlab-fuzz-" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// Writes `bytes` to `name` in the scratch folder; returns its path.
inline std::string write_file(const std::string& name, std::string_view bytes) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`; InputError (and its subclasses) is the expected refusal of bad input. Anything else
// propagates, and libFuzzer (or the replay driver) reports it as a finding.
template <typename Parse>
void refuse_only_as_input_error(Parse&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
}

}  // namespace batchlab::fuzz
