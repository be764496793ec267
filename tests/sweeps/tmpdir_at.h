// TMPDIR (the node-local root of sweeps/scratch_dir.h) pointed at a test folder for the object's
// life, and put back when it goes, also when the test fails by an exception: a test that left
// TMPDIR at a folder it removed made every later test of its process fail on
// temp_directory_path.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace batchlab::sweeps::testing {

class TmpdirAt {
 public:
  explicit TmpdirAt(const std::filesystem::path& dir) {
    const char* old = std::getenv("TMPDIR");
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::unsetenv("SLURM_TMPDIR");
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~TmpdirAt() {
    if (had_) {
      ::setenv("TMPDIR", old_.c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  TmpdirAt(const TmpdirAt&) = delete;
  TmpdirAt& operator=(const TmpdirAt&) = delete;

 private:
  bool had_ = false;
  std::string old_;
};

}  // namespace batchlab::sweeps::testing
