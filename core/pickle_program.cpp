#include "core/pickle_program.h"

#include <fmt/format.h>

#include <cstring>

namespace batchlab::pickle {
namespace {

// How an opcode's argument is laid out in the byte stream.
enum class Arg {
  kNone,
  kFixed,     // `size` bytes
  kCounted1,  // 1-byte little-endian length, then that many bytes
  kCounted4,  // 4-byte little-endian length, then that many bytes
  kLine,      // text up to and including '\n'
  kTwoLines,  // two such lines (module and name)
  kUnsupported,
};

struct ArgKind {
  Arg arg = Arg::kUnsupported;
  size_t size = 0;
};

// Protocols 0-3. Protocol 4 and 5 opcodes (framing, MEMOIZE, STACK_GLOBAL, ...) are not read by
// LibTorch's unpickler either, so they stay unsupported here.
ArgKind argument_kind(uint8_t op) {
  switch (op) {
    case '(':
    case '.':
    case '0':
    case '1':
    case '2':
    case 'N':
    case 'Q':
    case 'R':
    case 'a':
    case 'b':
    case 'd':
    case '}':
    case 'e':
    case 'l':
    case ']':
    case 'o':
    case 's':
    case 't':
    case ')':
    case 'u':
    case 0x81:
    case 0x85:
    case 0x86:
    case 0x87:
    case 0x88:
    case 0x89:
      return {Arg::kNone, 0};
    case 'K':
    case 'h':
    case 'q':
    case 0x80:
    case 0x82:  // BININT1 BINGET BINPUT PROTO EXT1
      return {Arg::kFixed, 1};
    case 'M':
    case 0x83:  // BININT2 EXT2
      return {Arg::kFixed, 2};
    case 'J':
    case 'j':
    case 'r':
    case 0x84:  // BININT LONG_BINGET LONG_BINPUT EXT4
      return {Arg::kFixed, 4};
    case 'G':  // BINFLOAT
      return {Arg::kFixed, 8};
    case 'U':
    case 'C':
    case 0x8a:  // SHORT_BINSTRING SHORT_BINBYTES LONG1
      return {Arg::kCounted1, 0};
    case 'X':
    case 'T':
    case 'B':
    case 0x8b:  // BINUNICODE BINSTRING BINBYTES LONG4
      return {Arg::kCounted4, 0};
    case 'I':
    case 'L':
    case 'S':
    case 'V':
    case 'F':
    case 'P':
    case 'g':
    case 'p':
      return {Arg::kLine, 0};
    case 'c':
    case 'i':  // GLOBAL INST
      return {Arg::kTwoLines, 0};
    default:
      return {Arg::kUnsupported, 0};
  }
}

// Thrown inside the splitter only, turned into Program::problem.
struct Stop {
  std::string problem;
  bool unsupported = false;
};

class Splitter {
 public:
  explicit Splitter(std::string_view bytes) : bytes_(bytes) {}

  size_t skip_argument(const Op& op) const {
    const ArgKind kind = argument_kind(op.code);
    switch (kind.arg) {
      case Arg::kNone:
        return op.arg_begin;
      case Arg::kFixed:
        return checked_end(op.arg_begin, kind.size);
      case Arg::kCounted1:
        return checked_end(op.arg_begin + 1, little_endian(op.arg_begin, 1));
      case Arg::kCounted4:
        return checked_end(op.arg_begin + 4, little_endian(op.arg_begin, 4));
      case Arg::kLine:
        return line_end(op.arg_begin);
      case Arg::kTwoLines:
        return line_end(line_end(op.arg_begin));
      case Arg::kUnsupported:
        break;
    }
    throw Stop{fmt::format("pickle opcode 0x{:02x} at byte {} is not part of pickle protocol 2, "
                           "the only one LibTorch reads",
                           op.code, op.begin),
               true};
  }

 private:
  uint64_t little_endian(size_t pos, size_t n) const {
    checked_end(pos, n);
    uint64_t value = 0;
    for (size_t i = 0; i < n; ++i) {
      value |= static_cast<uint64_t>(static_cast<uint8_t>(bytes_[pos + i])) << (8 * i);
    }
    return value;
  }

  // The length is compared with what is left, never added to a position first, so a length of
  // up to 2^32 - 1 cannot wrap or be believed.
  size_t checked_end(size_t pos, uint64_t n) const {
    if (pos > bytes_.size() || n > bytes_.size() - pos) {
      throw Stop{"the pickle program is truncated"};
    }
    return pos + static_cast<size_t>(n);
  }

  size_t line_end(size_t pos) const {
    const void* nl =
        pos < bytes_.size() ? std::memchr(bytes_.data() + pos, '\n', bytes_.size() - pos) : nullptr;
    if (nl == nullptr) throw Stop{"the pickle program is truncated"};
    return static_cast<size_t>(static_cast<const char*>(nl) - bytes_.data()) + 1;
  }

  std::string_view bytes_;
};

uint64_t unsigned_at(std::string_view bytes, size_t pos, size_t n) {
  uint64_t value = 0;
  for (size_t i = 0; i < n; ++i) {
    value |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[pos + i])) << (8 * i);
  }
  return value;
}

}  // namespace

Program split_program(std::string_view bytes) {
  Program program;
  const Splitter splitter(bytes);
  try {
    size_t pos = 0;
    while (pos < bytes.size()) {
      Op op;
      op.begin = pos;
      op.code = static_cast<uint8_t>(bytes[pos]);
      op.arg_begin = pos + 1;
      op.end = splitter.skip_argument(op);
      program.ops.push_back(op);
      pos = op.end;
      if (op.code == kStop) break;
    }
    if (program.ops.empty() || program.ops.back().code != kStop) {
      throw Stop{"the pickle program ends without STOP"};
    }
  } catch (const Stop& stop) {
    program.problem = stop.problem;
    program.unsupported_opcode = stop.unsupported;
  }
  return program;
}

std::optional<uint32_t> memo_index(std::string_view bytes, const Op& op) {
  if (op.code == kBinGet || op.code == kBinPut) {
    return static_cast<uint32_t>(unsigned_at(bytes, op.arg_begin, 1));
  }
  if (op.code == kLongBinGet || op.code == kLongBinPut) {
    return static_cast<uint32_t>(unsigned_at(bytes, op.arg_begin, 4));
  }
  return std::nullopt;
}

bool is_put(const Op& op) { return op.code == kBinPut || op.code == kLongBinPut; }

std::string memo_slot_problem(std::string_view bytes, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    if (!is_put(op)) continue;
    const uint32_t slot = *memo_index(bytes, op);
    if (slot > ops.size()) {
      return fmt::format(
          "a PUT at byte {} names memo slot {} in a program of {} instructions (the reader would "
          "make room for that many values)",
          op.begin, slot, ops.size());
    }
  }
  return {};
}

std::string_view counted_bytes(std::string_view bytes, const Op& op) {
  const Arg arg = argument_kind(op.code).arg;
  const size_t skip = arg == Arg::kCounted1 ? 1 : arg == Arg::kCounted4 ? 4 : 0;
  return bytes.substr(op.arg_begin + skip, op.end - op.arg_begin - skip);
}

std::optional<int64_t> integer_value(std::string_view bytes, const Op& op) {
  switch (op.code) {
    case 'K':
      return static_cast<int64_t>(unsigned_at(bytes, op.arg_begin, 1));
    case 'M':
      return static_cast<int64_t>(unsigned_at(bytes, op.arg_begin, 2));
    case 'J':
      return static_cast<int64_t>(static_cast<int32_t>(unsigned_at(bytes, op.arg_begin, 4)));
    case 0x8a: {  // LONG1: n bytes, two's complement, little-endian
      const std::string_view digits = counted_bytes(bytes, op);
      if (digits.size() > 8) return std::nullopt;
      if (digits.empty()) return 0;
      uint64_t value = unsigned_at(digits, 0, digits.size());
      const bool negative = (static_cast<uint8_t>(digits.back()) & 0x80) != 0;
      if (negative && digits.size() < 8) value |= ~uint64_t{0} << (8 * digits.size());
      return static_cast<int64_t>(value);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace batchlab::pickle
