// A fresh folder under the system temp folder for one test, removed with its contents with the
// object. The one such helper of every suite (the CLI's TempDir, the data tests' ScratchDir).
#pragma once

#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace batchlab::test_support {

struct TempDir {
  std::filesystem::path path;

  // The folder is named batchlab-TAG-XXXXXX (unique: mkdtemp).
  explicit TempDir(const std::string& tag = "test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("batchlab-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + pattern + " failed");
    }
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside the folder; writes `content` there first when it is not empty.
  std::string file(const std::string& name, const std::string& content = "") const {
    auto p = path / name;
    if (!content.empty()) std::ofstream(p) << content;
    return p.string();
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace batchlab::test_support
