// The query parameters of one API request, checked before anything reads the database: only the
// names an endpoint declares are accepted (each at most once unless declared repeatable), values
// are bounded in length and count, numbers in range, and choices come from fixed lists. Every
// violation is a BadRequest naming the parameter and what is accepted, so the page (and a person
// with curl) can act on it. Values are later only bound to SQL statements, never spliced in.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab::serve {

// The longest value a parameter may carry: run ids, keys and filters are far shorter.
inline constexpr std::size_t kMaxParamLength = 2048;

struct ParamSpec {
  std::string name;
  bool repeatable = false;
};

class RequestParams {
 public:
  // Throws BadRequest for a name not in `accepted`, a repeated non-repeatable name, or a value
  // longer than kMaxParamLength or holding control characters.
  RequestParams(const std::multimap<std::string, std::string>& raw,
                const std::vector<ParamSpec>& accepted);

  // The value of a parameter given once; nullopt when absent or empty.
  std::optional<std::string> text(const std::string& name) const;
  // Every value of a repeatable parameter, in request order.
  std::vector<std::string> all(const std::string& name) const;
  // A comma-separated list (empty items dropped); BadRequest above max_items.
  std::vector<std::string> list(const std::string& name, std::size_t max_items) const;
  // An integer in [lo, hi]; `fallback` when absent.
  int integer(const std::string& name, int lo, int hi, int fallback) const;
  // One of `allowed`; `fallback` when absent.
  std::string choice(const std::string& name, const std::vector<std::string>& allowed,
                     const std::string& fallback) const;
  // A run or sweep id (check_identifier); nullopt when absent.
  std::optional<std::string> identifier(const std::string& name) const;
  // A comma-separated list of ids, at most max_items; BadRequest when empty and `required`.
  std::vector<std::string> identifiers(const std::string& name, std::size_t max_items,
                                       bool required) const;

 private:
  std::multimap<std::string, std::string> values_;
};

// Run ids and sweep ids as batchlab makes them: letters, digits and -_.:, at most 128 characters.
// Throws BadRequest naming `param` otherwise (the value is bound, never spliced; this only keeps
// nonsense out of messages and logs).
void check_identifier(const std::string& param, const std::string& value);

}  // namespace batchlab::serve
