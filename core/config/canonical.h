// Canonical TOML: the one spelling of a resolved config that its run id hashes and the database
// stores. The writer itself (to_canonical_toml, run_id) is declared in loader.h; this header gives
// the value spellings it is built from, which the codecs share so a value reads back unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace batchlab::config {

// Shortest decimal that reads back to the same double and still reads as a TOML float:
// 0.1 -> "0.1", 1.0 -> "1.0", 1e-8 -> "1e-08", infinity -> "inf".
std::string format_float(double value);

std::string format_integer(int64_t value);

// A TOML basic string with quotes and the escapes TOML requires ("a\"b" for a"b).
std::string format_string(std::string_view value);

}  // namespace batchlab::config
