#include "core/config/loader.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/config/host_rules.h"
#include "core/config/init_file.h"
#include "core/config/overrides.h"
#include "core/config/read_context.h"
#include "core/config/reader.h"
#include "core/config/schema.h"
#include "core/config/toml_text.h"
#include "core/config/validation.h"

namespace batchlab::config {
namespace {

// Overrides, reading and validation all report into one context, so the user gets every problem
// of the file and of the command line in one error.
ExperimentConfig parse_document(toml::table document, const std::string& source_name,
                                const LoadOptions& options) {
  ReadContext ctx(source_name, known_key_paths());
  apply_overrides(document, options.overrides, ctx);
  ExperimentConfig config = read_experiment(document, ctx);
  std::vector<Diagnostic> init_problems;
  resolve_init_file(config.model, options.read_init_file, init_problems);
  ctx.report_all(std::move(init_problems));
  ctx.report_all(validate_experiment(config, options, &ctx));
  if (!ctx.empty()) throw ConfigError(ctx.take_sorted());
  if (options.warnings != nullptr) {
    for (auto& w : host_warnings(config, {options.host_cores, options.host_processes})) {
      options.warnings->push_back(ctx.located(std::move(w)));
    }
  }
  return config;
}

}  // namespace

ExperimentConfig parse_experiment(std::string_view toml_text, const std::string& source_name,
                                  const LoadOptions& options) {
  return parse_document(parse_toml(toml_text, source_name), source_name, options);
}

ExperimentConfig parse_experiment(const toml::table& table, const std::string& source_name,
                                  const LoadOptions& options) {
  // Overrides edit a copy: the caller (the sweep engine) reuses its table for other jobs.
  return parse_document(table, source_name, options);
}

ExperimentConfig load_experiment_file(const std::string& path, const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw InputError(fmt::format("experiment file '{}' does not exist", path));
  }
  if (!fs::is_regular_file(path, ec)) {
    throw InputError(fmt::format("experiment file '{}' is not a regular file", path));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    throw InputError(fmt::format("experiment file '{}' cannot be read", path));
  }
  return parse_experiment(text.str(), path, options);
}

}  // namespace batchlab::config
