#include "sweeps/task_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "core/errors.h"

namespace batchlab::sweeps {
namespace {

namespace fs = std::filesystem;

bool plain_name_byte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
}

// Why `line` is not a run folder, or empty.
std::string task_line_problem(const std::string& line) {
  if (std::any_of(line.begin(), line.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return "it holds a control byte";
  }
  if (line.front() != '/') return "not an absolute path";
  const std::string id = fs::path(line).filename().string();
  if (id.empty() || id == "." || id == ".." ||
      !std::all_of(id.begin(), id.end(), plain_name_byte)) {
    return "its last part is not a run id (letters, digits, '.', '_', '-')";
  }
  return {};
}

// What a refused line looks like in a message: printable ASCII, the first 60 bytes.
std::string quoted_task_line(const std::string& s) {
  std::string out;
  for (const char c : s.substr(0, 60)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  return "'" + out + (s.size() > 60 ? "...'" : "'");
}

}  // namespace

TaskLine read_task_line(const std::string& tasks_file, size_t index) {
  std::ifstream in(tasks_file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the task list", tasks_file));
  size_t tasks = 0;
  size_t line_number = 0;
  std::string line;
  while (in) {
    // One line, at most kMaxTaskLine bytes of it kept (std::getline would keep them all).
    line.clear();
    bool too_long = false;
    char c = 0;
    bool any = false;
    while (in.get(c)) {
      any = true;
      if (c == '\n') break;
      if (line.size() < kMaxTaskLine) {
        line += c;
      } else {
        too_long = true;
      }
    }
    if (!any) break;
    ++line_number;
    if (line.empty() && !too_long) continue;
    if (tasks++ != index) continue;
    if (too_long) {
      throw InputError(fmt::format("{}:{}: task {}: a line longer than {} bytes is no run folder",
                                   tasks_file, line_number, index, kMaxTaskLine));
    }
    const std::string why = task_line_problem(line);
    if (!why.empty()) {
      throw InputError(fmt::format(
          "{}:{}: task {}: {} is not a run folder ({}); the task list is written by `sweep "
          "submit` and read by every array task: submit again rather than edit it",
          tasks_file, line_number, index, quoted_task_line(line), why));
    }
    return {line, fs::path(line).filename().string()};
  }
  throw InputError(fmt::format("task {} is not in {} ({} tasks)", index, tasks_file, tasks));
}

}  // namespace batchlab::sweeps
