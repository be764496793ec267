#include "core/train/checkpoint_code.h"

#include <fmt/format.h>

namespace batchlab::train {
namespace {

class CodeScan {
 public:
  explicit CodeScan(std::string_view source) : s_(source) {}

  std::string problem() {
    while (pos_ < s_.size()) {
      if (at_line_start_ && depth_ == 0) {
        const std::string why = indentation();
        if (!why.empty()) return why;
        continue;  // the source may end in the indentation
      }
      const char c = s_[pos_];
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == '\'' || c == '"') {
        string_literal();
        continue;
      }
      if (c == '\\' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') {
        pos_ += 2;  // a continued line: still the same logical line
        continue;
      }
      if (c == '\n' && depth_ == 0) {
        line_start_ = ++pos_;
        at_line_start_ = true;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') {
        if (++depth_ > kMaxCodeBrackets) {
          return fmt::format("brackets nest more than {} deep at byte {}", kMaxCodeBrackets, pos_);
        }
      } else if ((c == ')' || c == ']' || c == '}') && depth_ > 0) {
        --depth_;
      }
      ++pos_;
      if (pos_ - line_start_ > kMaxCodeLine) {
        return fmt::format("a line longer than {} characters at byte {}", kMaxCodeLine,
                           line_start_);
      }
    }
    return {};
  }

 private:
  std::string indentation() {
    size_t columns = 0;
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) {
      columns += s_[pos_] == '\t' ? 8 : 1;
      ++pos_;
    }
    at_line_start_ = false;
    if (columns > kMaxCodeIndent) {
      return fmt::format("a line indented {} columns at byte {} (at most {})", columns, line_start_,
                         kMaxCodeIndent);
    }
    return {};
  }

  // Skips a '...' or "..." literal, triple-quoted or not, with its escapes.
  void string_literal() {
    const char quote = s_[pos_];
    const bool triple = s_.compare(pos_, 3, std::string(3, quote)) == 0;
    pos_ += triple ? 3 : 1;
    while (pos_ < s_.size()) {
      if (s_[pos_] == '\\') {
        pos_ += 2;
        continue;
      }
      if (triple ? s_.compare(pos_, 3, std::string(3, quote)) == 0 : s_[pos_] == quote) {
        pos_ += triple ? 3 : 1;
        return;
      }
      if (!triple && s_[pos_] == '\n') return;  // unterminated: the compiler reports it
      ++pos_;
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  size_t depth_ = 0;
  bool at_line_start_ = true;
};

}  // namespace

std::string checkpoint_code_problem(std::string_view source) { return CodeScan(source).problem(); }

}  // namespace batchlab::train
