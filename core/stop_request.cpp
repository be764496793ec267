#include "core/stop_request.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace batchlab {

namespace {
bool is_word(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}
}  // namespace

std::optional<StopRequest> read_stop_request(const std::string& path, std::string* problem) {
  std::ifstream in(path);
  if (!in) return std::nullopt;  // no request (yet)
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  std::istringstream words(text);
  StopRequest r;
  std::string step, extra;
  words >> r.reason >> step;
  const bool extra_words = static_cast<bool>(words >> extra);
  size_t used = 0;
  bool numeric = false;
  try {
    r.step = std::stoll(step, &used);
    numeric = used == step.size();
  } catch (const std::exception&) {
    numeric = false;
  }
  if (is_word(r.reason) && numeric && r.step >= 0 && !extra_words) return r;
  if (problem != nullptr) {
    *problem = fmt::format(
        "stop file {} ignored: it holds \"{}\", expected one line `REASON STEP` (a word and an "
        "integer >= 0, e.g. `pruned 120`)",
        path, trimmed(text).substr(0, 80));
  }
  return std::nullopt;
}

std::string StopRequest::at_step(int64_t honoured_at) const {
  return fmt::format("{} at step {}", reason, honoured_at);
}

void write_stop_request(const std::string& path, const StopRequest& request) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  try {
    write_file_atomically(path, fmt::format("{} {}\n", request.reason, request.step));
  } catch (const Error& e) {
    throw Error(fmt::format("cannot write the stop request: {}", e.what()));
  }
}

}  // namespace batchlab
