#include "sweeps/scratch_dir.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/errors.h"

namespace batchlab::sweeps {

namespace {

// The host name as one path component: anything but letters, digits, '.', '-' and '_' becomes '_'.
std::string host_component() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) return "host";
  std::string out;
  for (const char* c = host.data(); *c != '\0'; ++c) {
    const bool plain =
        std::isalnum(static_cast<unsigned char>(*c)) || *c == '.' || *c == '-' || *c == '_';
    out += plain ? *c : '_';
  }
  return out.empty() ? "host" : out;
}

}  // namespace

std::string node_scratch_root() {
  for (const char* name : {"SLURM_TMPDIR", "TMPDIR"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "/tmp";
}

ScratchDir::ScratchDir(const std::string& what) {
  const std::string root = node_scratch_root();
  std::string pattern =
      fmt::format("{}/batchlab-{}-{}-{}-XXXXXX", root, what, host_component(), ::getpid());
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    throw Error(
        fmt::format("cannot make a folder under {} ({}): {}; set TMPDIR to a writable "
                    "folder on the node's own disk",
                    root, pattern, std::strerror(errno)));
  }
  path_ = name.data();
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace batchlab::sweeps
