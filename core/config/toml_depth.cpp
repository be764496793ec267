#include "core/config/toml_depth.h"

#include <vector>

namespace batchlab::config {
namespace {

// One pass over the text that knows where TOML puts keys, strings and comments, and nothing more.
class DepthScanner {
 public:
  DepthScanner(std::string_view text, size_t max_depth) : text_(text), max_depth_(max_depth) {}

  TomlDepth run() {
    while (i_ < text_.size() && result_.depth <= max_depth_) step();
    return result_;
  }

 private:
  // An open inline array or table and the level it sits at: an array's elements are one level
  // further, an inline table's keys are counted from it as a header's are.
  struct Open {
    char kind;  // '[' or '{'
    size_t level;
  };

  void step() {
    const char c = text_[i_];
    if (c == '\n') {
      newline();
      return;
    }
    if (c == '#') {  // a comment runs to the end of the line
      while (i_ < text_.size() && text_[i_] != '\n') ++i_;
      return;
    }
    if (c == '"' || c == '\'') {
      skip_string(c);
      return;
    }
    const bool blank = c == ' ' || c == '\t' || c == '\r';
    const bool statement_start = line_start_ && open_.empty();
    if (!blank) line_start_ = false;
    if (statement_start && c == '[') {
      header();
      return;
    }
    switch (c) {
      case '.':
        if (in_key_) ++key_dots_;
        break;
      case '=':
        if (in_key_) {
          in_key_ = false;
          value_level_ = key_base() + key_dots_ + 1;
          reach(value_level_);
        }
        break;
      case '[':
      case '{':
        if (!in_key_) open_container(c);
        break;
      case ']':
      case '}':
        if (!open_.empty()) open_.pop_back();
        after_element();
        break;
      case ',':
        after_element();
        break;
      default:
        break;
    }
    ++i_;
  }

  // The value at `value_level_` is an array or an inline table.
  void open_container(char kind) {
    open_.push_back({kind, value_level_});
    if (kind == '{') {
      start_key();
    } else {
      value_level_ = value_level_ + 1;
      reach(value_level_);
    }
  }

  // After a ',' or a closing bracket: inside an inline table the next thing is a key, inside an
  // array a value.
  void after_element() {
    if (open_.empty()) return;
    if (open_.back().kind == '{') {
      start_key();
    } else {
      in_key_ = false;
      value_level_ = open_.back().level + 1;
    }
  }

  void start_key() {
    in_key_ = true;
    key_dots_ = 0;
  }

  // The table the current key belongs to: the header's, or an inline table's.
  size_t key_base() const { return open_.empty() ? header_level_ : open_.back().level; }

  void newline() {
    ++i_;
    ++line_;
    line_begin_ = i_;
    // Arrays may span lines; a new statement starts only outside every bracket.
    if (open_.empty()) {
      line_start_ = true;
      start_key();
    }
  }

  // `[a.b.c]` is 3 levels, `[[a.b]]` 3 (the array and its table).
  void header() {
    const size_t start = i_;
    size_t dots = 0;
    bool array_of_tables = i_ + 1 < text_.size() && text_[i_ + 1] == '[';
    i_ += array_of_tables ? 2 : 1;
    while (i_ < text_.size() && text_[i_] != ']' && text_[i_] != '\n') {
      if (text_[i_] == '"' || text_[i_] == '\'') {
        skip_string(text_[i_]);
        continue;
      }
      if (text_[i_] == '.') ++dots;
      ++i_;
    }
    header_level_ = dots + 1 + (array_of_tables ? 1 : 0);
    const size_t end = i_;
    i_ = start;
    reach(header_level_);
    i_ = end;
    while (i_ < text_.size() && text_[i_] == ']') ++i_;
    in_key_ = false;  // the rest of the line can hold only a comment
  }

  // Skips a string starting at i_ ('"' basic, '\'' literal, tripled for multi-line ones).
  void skip_string(char quote) {
    const bool multiline = text_.substr(i_, 3) == std::string_view(quote == '"' ? "\"\"\"" : "'''");
    i_ += multiline ? 3 : 1;
    while (i_ < text_.size()) {
      const char c = text_[i_];
      if (c == '\\' && quote == '"' && i_ + 1 < text_.size() && text_[i_ + 1] != '\n') {
        i_ += 2;  // an escaped character, `\"` included (a line-ending backslash is counted below)
        continue;
      }
      if (c == '\n') {
        if (!multiline) return;  // an unterminated one-line string: the parser reports it
        ++line_;
        line_begin_ = i_ + 1;
      }
      if (c == quote && (!multiline || closes_multiline(quote))) {
        i_ += multiline ? 3 : 1;
        return;
      }
      ++i_;
    }
  }

  bool closes_multiline(char quote) const {
    return i_ + 2 < text_.size() && text_[i_ + 1] == quote && text_[i_ + 2] == quote;
  }

  void reach(size_t level) {
    if (level <= result_.depth) return;
    result_.depth = level;
    result_.line = line_;
    result_.column = static_cast<int>(i_ - line_begin_) + 1;
  }

  std::string_view text_;
  size_t max_depth_;
  size_t i_ = 0;
  int line_ = 1;
  size_t line_begin_ = 0;
  bool line_start_ = true;
  bool in_key_ = true;
  size_t key_dots_ = 0;
  size_t header_level_ = 0;
  size_t value_level_ = 0;
  std::vector<Open> open_;
  TomlDepth result_;
};

}  // namespace

TomlDepth toml_depth(std::string_view text, size_t max_depth) {
  return DepthScanner(text, max_depth).run();
}

}  // namespace batchlab::config
