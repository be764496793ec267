#include "experiments/data/sentencepiece_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "core/errors.h"

#ifndef BATCHLAB_SENTENCEPIECE_MODULE
#define BATCHLAB_SENTENCEPIECE_MODULE ""
#endif

namespace batchlab::data {
namespace {

constexpr const char* kModuleName = "libbatchlab_sentencepiece.so";

using Factory = SentencePieceBackend* (*)();

std::vector<std::string> candidate_paths() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("BATCHLAB_SENTENCEPIECE_MODULE"); env && *env)
    out.push_back(env);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / kModuleName).string());
    out.push_back((exe.parent_path().parent_path() / kModuleName).string());
  }
  if (*BATCHLAB_SENTENCEPIECE_MODULE) out.push_back(BATCHLAB_SENTENCEPIECE_MODULE);
  return out;
}

// AddressSanitizer refuses RTLD_DEEPBIND (a library bound to itself first would bypass its
// interceptors). Only the fuzzing build is built with it, and its text harness (fuzz/) links no
// LibTorch, so there is no second protobuf for SentencePiece to bind to.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL | (kAddressSanitizer ? 0 : RTLD_DEEPBIND);

// Loaded once and never unloaded: backends created from it live until the process ends.
Factory load_factory() {
  static std::once_flag once;
  static Factory factory = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::vector<std::string> tried;
    for (const auto& path : candidate_paths()) {
      if (!std::filesystem::exists(path)) {
        tried.push_back(path + " (missing)");
        continue;
      }
      void* handle = ::dlopen(path.c_str(), kDlopenFlags);
      if (!handle) {
        tried.push_back(fmt::format("{} ({})", path, ::dlerror()));
        continue;
      }
      factory = reinterpret_cast<Factory>(::dlsym(handle, "batchlab_sentencepiece_create"));
      if (factory) return;
      tried.push_back(path + " (no batchlab_sentencepiece_create)");
    }
    failure = fmt::format("cannot load the SentencePiece module {}; tried: {}", kModuleName,
                          fmt::join(tried, "; "));
  });
  if (!factory) throw Error(failure);
  return factory;
}

}  // namespace

std::unique_ptr<SentencePieceBackend> make_sentencepiece_backend() {
  return std::unique_ptr<SentencePieceBackend>(load_factory()());
}

}  // namespace batchlab::data
