#include "core/config/reader.h"

#include <string>
#include <vector>

#include "core/config/codecs.h"
#include "core/config/schema.h"

namespace batchlab::config {
namespace {

std::vector<std::string> top_level_keys() {
  std::vector<std::string> keys = {std::string(kSchemaVersionKey)};
  for (const auto& section : experiment_sections()) keys.push_back(section.name);
  return keys;
}

}  // namespace

void resolve_derived(ExperimentConfig& config, const ReadContext& ctx) {
  for (const auto& section : experiment_sections()) section.derive(config, ctx);
  // "nesterov" is SGD with Nesterov momentum; the canonical config records the flag as well.
  if (config.optim.name == "nesterov") config.optim.nesterov = true;
}

ExperimentConfig read_experiment(const toml::table& root, ReadContext& ctx) {
  ExperimentConfig config;
  const std::string version_key(kSchemaVersionKey);
  for (auto&& [key, node] : root) {
    const std::string name(key.str());
    if (name == version_key) {
      ctx.note(name, node);
      Codec<int64_t>{}.read(node, config.schema_version, ctx, name);
      continue;
    }
    const Section* section = find_section(name);
    if (section == nullptr) {
      ctx.unknown_key("", key, node, top_level_keys());
      continue;
    }
    ctx.note(name, node);
    if (const auto* table = node.as_table()) {
      section->read(*table, config, ctx);
    } else {
      ctx.type_error(name, node, "a table", "write the keys under a [" + name + "] header");
    }
  }

  if (!ctx.present(version_key)) {
    ctx.missing(version_key, "missing; add `schema_version = 1` as the first line of the file");
  } else if (config.schema_version != kSchemaVersion) {
    Diagnostic d;
    d.key = version_key;
    d.value = Codec<int64_t>{}.write(config.schema_version);
    d.rule = "must be 1; this version of batchlab reads schema_version = 1 only";
    ctx.report(std::move(d));
  }

  resolve_derived(config, ctx);
  return config;
}

}  // namespace batchlab::config
