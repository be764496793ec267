#include "sweeps/slurm_job_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "core/errors.h"

namespace batchlab::sweeps {
namespace {

namespace fs = std::filesystem;

// The file's bytes, at most kMaxJobIdFileBytes of them; nullopt-like "" with `exists` false when
// there is no file.
struct IdFileContents {
  bool exists = false;
  std::string bytes;
};

IdFileContents read_id_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the Slurm job ids it holds", path));
  IdFileContents out{true, std::string(kMaxJobIdFileBytes + 1, '\0')};
  in.read(out.bytes.data(), static_cast<std::streamsize>(out.bytes.size()));
  out.bytes.resize(static_cast<size_t>(in.gcount()));
  if (out.bytes.size() > kMaxJobIdFileBytes) {
    throw InputError(fmt::format(
        "{}: more than {} bytes, where batchlab writes a few Slurm job ids; the file is not "
        "batchlab's (remove it, or restore it from the run folder's owner)",
        path, kMaxJobIdFileBytes));
  }
  return out;
}

bool is_id_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim_id_text(std::string_view s) {
  while (!s.empty() && is_id_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_id_blank(s.back())) s.remove_suffix(1);
  return s;
}

// What a refused line looks like in a message: printable ASCII, the first 40 bytes.
std::string quoted_id(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, 40)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  return "'" + out + (s.size() > 40 ? "...'" : "'");
}

[[noreturn]] void not_an_id(const std::string& path, size_t line, std::string_view text) {
  throw InputError(fmt::format(
      "{}:{}: {} is not a Slurm job id (1 to 20 digits, as sbatch --parsable prints); batchlab "
      "passes these ids to squeue and scancel, so the file is refused rather than used "
      "(remove it, or put the job id back)",
      path, line, quoted_id(text)));
}

}  // namespace

bool is_slurm_job_id(std::string_view text) {
  return !text.empty() && text.size() <= 20 && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::string read_slurm_job_file(const std::string& path) {
  const IdFileContents file = read_id_file(path);
  const std::string_view id = trim_id_text(file.bytes);
  if (id.empty()) return "";
  if (!is_slurm_job_id(id)) not_an_id(path, 1, id);
  return std::string(id);
}

std::vector<std::string> read_job_id_lines(const std::string& path) {
  const IdFileContents file = read_id_file(path);
  std::vector<std::string> ids;
  std::string_view rest = file.bytes;
  for (size_t line = 1; !rest.empty(); ++line) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view id = trim_id_text(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (id.empty()) continue;
    if (!is_slurm_job_id(id)) not_an_id(path, line, id);
    ids.emplace_back(id);
  }
  return ids;
}

}  // namespace batchlab::sweeps
