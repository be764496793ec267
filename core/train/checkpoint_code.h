// Bounds on the TorchScript source of a checkpoint's module types (the archive's code/ records),
// checked before LibTorch compiles it (core/train/checkpoint_pickles.h calls this for every
// record under code/).
//
// Why: LibTorch compiles that source with a recursive parser and builds, prints and destroys its
// syntax trees recursively, so a checkpoint whose code/__torch__.py holds 200,000 nested
// parentheses (400 KB) ends the reading process with a stack overflow (exit 139), as deep data.pkl
// nesting did. The source LibTorch writes for batchlab's modules is flat: one class per module
// type, attribute declarations only, lines well under 200 characters. Refused here:
//   - brackets ((), [], {}) nested more than kMaxCodeBrackets deep;
//   - a logical line (physical lines joined by a backslash or open brackets) longer than
//     kMaxCodeLine characters, which bounds how long a chain of operators can be;
//   - indentation deeper than kMaxCodeIndent columns, which bounds how deep blocks nest.
// String literals and comments are skipped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace batchlab::train {

inline constexpr size_t kMaxCodeBrackets = 64;
inline constexpr size_t kMaxCodeLine = 8192;
inline constexpr size_t kMaxCodeIndent = 512;

// Why `source` cannot be compiled safely, or empty.
std::string checkpoint_code_problem(std::string_view source);

}  // namespace batchlab::train
