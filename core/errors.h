// Typed exceptions thrown by library code. Only cli/ catches them and chooses exit codes:
// InputError and its subclasses (bad config, arguments, data files, checkpoints) -> exit 2,
// everything else -> exit 1.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace batchlab {

// Base of every batchlab exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user gave something unusable; the message names the file, key or value and the fix.
class InputError : public Error {
 public:
  using Error::Error;
};

// One problem found while validating a configuration, printed as
// `file:line:col: key.path = value: rule`.
struct Diagnostic {
  std::string file;
  int line = 0;  // 0 when the problem has no source position (a missing key, an override)
  int column = 0;
  std::string key;
  std::string value;  // as written in the file ("" when the key is missing)
  std::string rule;

  std::string to_string() const;
};

// Every problem of one configuration at once.
class ConfigError : public InputError {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

// A data file is missing, truncated or malformed.
class DataError : public InputError {
 public:
  using InputError::InputError;
};

// A checkpoint cannot be used (corrupt, or from another configuration).
class CheckpointError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace batchlab
