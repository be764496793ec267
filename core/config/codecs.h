// Codecs: how one C++ field type is read from a TOML node (with a diagnostic naming the expected
// and found type when it cannot be) and written back as canonical TOML text. The field table
// (field_table.h) picks Codec<T> by the member's type unless a field names another codec, as
// schedule.budget does (a string in TOML, seconds in the struct).
#pragma once

#include <toml++/toml.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/read_context.h"

namespace batchlab::config {

// Scalars and arrays have no nested rules; table codecs override check().
struct LeafCodec {
  template <class T>
  void check(const T&, const std::string&, std::vector<Diagnostic>&) const {}
};

// Each codec: `bool read(node, out, ctx, path) const` assigns `out` and returns true, or reports a
// diagnostic to ctx and leaves `out` untouched; `std::string write(value) const` gives the
// canonical TOML text of the value.
template <class T>
struct Codec;

template <>
struct Codec<int64_t> : LeafCodec {
  bool read(const toml::node& node, int64_t& out, ReadContext& ctx, const std::string& path) const;
  std::string write(int64_t value) const;
};

// Integers are accepted (`base_lr = 1` means 1.0); NaN and infinity are rejected because no key
// has a use for them and they would make the run id depend on how NaN happens to print.
template <>
struct Codec<double> : LeafCodec {
  bool read(const toml::node& node, double& out, ReadContext& ctx, const std::string& path) const;
  std::string write(double value) const;
};

template <>
struct Codec<bool> : LeafCodec {
  bool read(const toml::node& node, bool& out, ReadContext& ctx, const std::string& path) const;
  std::string write(bool value) const;
};

template <>
struct Codec<std::string> : LeafCodec {
  bool read(const toml::node& node, std::string& out, ReadContext& ctx,
            const std::string& path) const;
  std::string write(const std::string& value) const;
};

template <>
struct Codec<std::array<double, 2>> : LeafCodec {
  bool read(const toml::node& node, std::array<double, 2>& out, ReadContext& ctx,
            const std::string& path) const;
  std::string write(const std::array<double, 2>& value) const;
};

template <>
struct Codec<std::vector<double>> : LeafCodec {
  bool read(const toml::node& node, std::vector<double>& out, ReadContext& ctx,
            const std::string& path) const;
  std::string write(const std::vector<double>& value) const;
};

template <>
struct Codec<std::vector<std::string>> : LeafCodec {
  bool read(const toml::node& node, std::vector<std::string>& out, ReadContext& ctx,
            const std::string& path) const;
  std::string write(const std::vector<std::string>& value) const;
};

// A wall-clock duration written as a string ("1h30m"), stored as seconds.
struct DurationCodec : LeafCodec {
  bool read(const toml::node& node, double& out, ReadContext& ctx, const std::string& path) const;
  std::string write(double seconds) const;
};

}  // namespace batchlab::config
