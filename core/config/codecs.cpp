#include "core/config/codecs.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "core/config/canonical.h"
#include "core/config/duration.h"
#include "core/config/toml_text.h"

namespace batchlab::config {
namespace {

// A float element of an array, with the same integer-is-fine rule as a scalar float.
std::optional<double> number_of(const toml::node& node) {
  if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
  if (const auto* f = node.as_floating_point()) return f->get();
  return std::nullopt;
}

// Reads every element of an array with `element`, or reports the first element that does not fit.
template <class T, class ElementReader>
bool read_array(const toml::node& node, std::vector<T>& out, ReadContext& ctx,
                const std::string& path, std::string_view expected, ElementReader element) {
  const auto* array = node.as_array();
  if (array == nullptr) {
    ctx.type_error(path, node, expected);
    return false;
  }
  std::vector<T> values;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& item = *array->get(i);
    auto value = element(item);
    if (!value) {
      ctx.bad_value(
          path, node,
          fmt::format("expected {}, but element {} is {}", expected, i, node_type_name(item)));
      return false;
    }
    values.push_back(std::move(*value));
  }
  out = std::move(values);
  return true;
}

template <class T, class Format>
std::string write_array(const std::vector<T>& values, Format format) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += format(values[i]);
  }
  return out + "]";
}

}  // namespace

bool Codec<int64_t>::read(const toml::node& node, int64_t& out, ReadContext& ctx,
                          const std::string& path) const {
  if (const auto* value = node.as_integer()) {
    out = value->get();
    return true;
  }
  std::string hint;
  if (const auto* f = node.as_floating_point();
      f && std::fabs(f->get()) < 9.0e18 && f->get() == std::floor(f->get())) {
    hint = fmt::format("write {} without a decimal point",
                       format_integer(static_cast<int64_t>(f->get())));
  }
  ctx.type_error(path, node, "an integer", hint);
  return false;
}

std::string Codec<int64_t>::write(int64_t value) const { return format_integer(value); }

bool Codec<double>::read(const toml::node& node, double& out, ReadContext& ctx,
                         const std::string& path) const {
  auto value = number_of(node);
  if (!value) {
    ctx.type_error(path, node, "a float");
    return false;
  }
  if (!std::isfinite(*value)) {
    ctx.bad_value(path, node, "must be a finite number");
    return false;
  }
  out = *value;
  return true;
}

std::string Codec<double>::write(double value) const { return format_float(value); }

bool Codec<bool>::read(const toml::node& node, bool& out, ReadContext& ctx,
                       const std::string& path) const {
  if (const auto* value = node.as_boolean()) {
    out = value->get();
    return true;
  }
  ctx.type_error(path, node, "a boolean", "write true or false without quotes");
  return false;
}

std::string Codec<bool>::write(bool value) const { return value ? "true" : "false"; }

bool Codec<std::string>::read(const toml::node& node, std::string& out, ReadContext& ctx,
                              const std::string& path) const {
  if (const auto* value = node.as_string()) {
    out = value->get();
    return true;
  }
  ctx.type_error(path, node, "a string", "put the value in double quotes");
  return false;
}

std::string Codec<std::string>::write(const std::string& value) const {
  return format_string(value);
}

bool Codec<std::array<double, 2>>::read(const toml::node& node, std::array<double, 2>& out,
                                        ReadContext& ctx, const std::string& path) const {
  std::vector<double> values;
  if (!read_array(node, values, ctx, path, "an array of 2 floats", number_of)) return false;
  if (values.size() != 2) {
    ctx.bad_value(path, node,
                  fmt::format("expected an array of 2 floats, found {} elements", values.size()));
    return false;
  }
  if (!std::isfinite(values[0]) || !std::isfinite(values[1])) {
    ctx.bad_value(path, node, "elements must be finite numbers");
    return false;
  }
  out = {values[0], values[1]};
  return true;
}

std::string Codec<std::array<double, 2>>::write(const std::array<double, 2>& value) const {
  return "[" + format_float(value[0]) + ", " + format_float(value[1]) + "]";
}

bool Codec<std::vector<double>>::read(const toml::node& node, std::vector<double>& out,
                                      ReadContext& ctx, const std::string& path) const {
  std::vector<double> values;
  if (!read_array(node, values, ctx, path, "an array of floats", number_of)) return false;
  for (double v : values) {
    if (!std::isfinite(v)) {
      ctx.bad_value(path, node, "elements must be finite numbers");
      return false;
    }
  }
  out = std::move(values);
  return true;
}

std::string Codec<std::vector<double>>::write(const std::vector<double>& value) const {
  return write_array(value, format_float);
}

bool Codec<std::vector<std::string>>::read(const toml::node& node, std::vector<std::string>& out,
                                           ReadContext& ctx, const std::string& path) const {
  auto element = [](const toml::node& item) -> std::optional<std::string> {
    if (const auto* s = item.as_string()) return s->get();
    return std::nullopt;
  };
  return read_array(node, out, ctx, path, "an array of strings", element);
}

std::string Codec<std::vector<std::string>>::write(const std::vector<std::string>& value) const {
  return write_array(value, format_string);
}

bool DurationCodec::read(const toml::node& node, double& out, ReadContext& ctx,
                         const std::string& path) const {
  const auto* text = node.as_string();
  if (text == nullptr) {
    ctx.type_error(path, node, "a duration string",
                   "write it in quotes with a unit, e.g. \"2h\", \"90m\" or \"45s\"");
    return false;
  }
  const ParsedDuration parsed = parse_duration(text->get());
  if (!parsed.seconds) {
    ctx.bad_value(path, node, "malformed duration: " + parsed.error);
    return false;
  }
  out = *parsed.seconds;
  return true;
}

std::string DurationCodec::write(double seconds) const {
  return format_string(format_duration(seconds));
}

}  // namespace batchlab::config
