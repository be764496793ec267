#include "models/state_dict_pickle.h"

#include <c10/util/Exception.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "core/errors.h"
#include "models/pickle_nesting.h"

namespace batchlab::models {
namespace {

// Pickle opcodes (Python's Lib/pickletools.py documents each); only the ones the rewrite looks at
// by name are listed here, the argument layout of every other one is in `argument_kind`.
constexpr uint8_t kMark = '(';
constexpr uint8_t kStop = '.';
constexpr uint8_t kBuild = 'b';
constexpr uint8_t kGlobal = 'c';
constexpr uint8_t kEmptyDict = '}';
constexpr uint8_t kEmptyTuple = ')';
constexpr uint8_t kReduce = 'R';
constexpr uint8_t kBinGet = 'h';
constexpr uint8_t kLongBinGet = 'j';
constexpr uint8_t kBinPut = 'q';
constexpr uint8_t kLongBinPut = 'r';
constexpr uint8_t kTuple2 = 0x86;
constexpr uint8_t kSetItem = 's';
constexpr uint8_t kSetItems = 'u';
constexpr uint8_t kAppend = 'a';
constexpr uint8_t kAppends = 'e';

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

// One decoded instruction: bytes [begin, end) of the program, argument from arg_begin.
struct Op {
  uint8_t code = 0;
  size_t begin = 0;
  size_t arg_begin = 0;
  size_t end = 0;
};

class OpReader {
 public:
  OpReader(const std::vector<char>& bytes, const std::string& source)
      : bytes_(bytes), source_(source) {}

  std::vector<Op> read_all() {
    std::vector<Op> ops;
    size_t pos = 0;
    while (pos < bytes_.size()) {
      Op op;
      op.begin = pos;
      op.code = static_cast<uint8_t>(bytes_[pos]);
      op.arg_begin = pos + 1;
      op.end = skip_argument(op);
      ops.push_back(op);
      pos = op.end;
      if (op.code == kStop) break;
    }
    if (ops.empty() || ops.back().code != kStop) fail("the pickle program ends without STOP");
    return ops;
  }

 private:
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
    fail(
        fmt::format("pickle opcode 0x{:02x} at byte {} is not part of pickle protocol 2, the "
                    "only one LibTorch reads; save with torch.save's default pickle_protocol=2",
                    op.code, op.begin));
  }

  uint64_t little_endian(size_t pos, size_t n) const {
    checked_end(pos, n);
    uint64_t value = 0;
    for (size_t i = 0; i < n; ++i) {
      value |= static_cast<uint64_t>(static_cast<uint8_t>(bytes_[pos + i])) << (8 * i);
    }
    return value;
  }

  size_t checked_end(size_t pos, uint64_t n) const {
    if (pos > bytes_.size() || n > bytes_.size() - pos) fail("the pickle program is truncated");
    return pos + static_cast<size_t>(n);
  }

  size_t line_end(size_t pos) const {
    const void* nl =
        pos < bytes_.size() ? std::memchr(bytes_.data() + pos, '\n', bytes_.size() - pos) : nullptr;
    if (nl == nullptr) fail("the pickle program is truncated");
    return static_cast<size_t>(static_cast<const char*>(nl) - bytes_.data()) + 1;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: cannot read the state_dict: {}", source_, what));
  }

  const std::vector<char>& bytes_;
  const std::string& source_;
};

std::optional<uint32_t> memo_index(const std::vector<char>& bytes, const Op& op) {
  const auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(bytes[op.arg_begin + i]));
  };
  if (op.code == kBinGet || op.code == kBinPut) return byte(0);
  if (op.code == kLongBinGet || op.code == kLongBinPut) {
    return byte(0) | (byte(1) << 8) | (byte(2) << 16) | (byte(3) << 24);
  }
  return std::nullopt;
}

bool is_put(const Op& op) { return op.code == kBinPut || op.code == kLongBinPut; }

bool is_ordered_dict_global(const std::vector<char>& bytes, const Op& op) {
  static const std::string kName = "collections\nOrderedDict\n";
  return op.code == kGlobal && op.end - op.arg_begin == kName.size() &&
         std::equal(kName.begin(), kName.end(), bytes.begin() + op.arg_begin);
}

// Runs the program's stack discipline (not its values) to find, for every SETITEM and APPEND,
// the instruction where the item it consumes first was pushed. LibTorch 1.13 reads neither
// opcode, but reads their batch forms: `d k v SETITEM` == `d MARK k v SETITEMS` and
// `l v APPEND` == `l MARK v APPENDS`, so a MARK goes before that instruction.
class StackSimulator {
 public:
  StackSimulator(const std::vector<Op>& ops, const std::string& source)
      : ops_(ops), source_(source) {}

  // marks_before[i]: MARKs to insert before instruction i.
  std::vector<int> marks_before() {
    std::vector<int> marks(ops_.size(), 0);
    for (size_t i = 0; i < ops_.size(); ++i) {
      const uint8_t c = ops_[i].code;
      switch (c) {
        case kMark:
          stack_.push_back({i, true});
          break;
        case 'q':
        case 'r':
        case 'p':
        case 0x80:
        case kStop:  // PUT variants, PROTO
          break;
        case 's':  // SETITEM: dict key value
          need(3, i);
          ++marks[stack_[stack_.size() - 2].first_op];
          pop(2, i);
          break;
        case 'a':  // APPEND: list value
          need(2, i);
          ++marks[stack_.back().first_op];
          pop(1, i);
          break;
        case '0':  // POP
          pop(1, i);
          break;
        case 'u':
        case 'e':
        case '1':  // SETITEMS APPENDS POP_MARK
          pop_to_mark(i);
          if (c != '1') need(1, i);
          break;
        case 't':
        case 'l':
        case 'd':
        case 'i':
        case 'o':  // TUPLE LIST DICT INST OBJ
          stack_.push_back({pop_to_mark(i), false});
          break;
        case 'Q':
        case 0x85:  // BINPERSID TUPLE1: one item in, one out
          need(1, i);
          break;
        case 0x86:
        case 0x87:
        case 'R':
        case 'b':
        case 0x81: {  // TUPLE2/3 REDUCE BUILD NEWOBJ
          const size_t n = c == 0x87 ? 3 : 2;
          need(n, i);
          const size_t first = stack_[stack_.size() - n].first_op;
          pop(n, i);
          stack_.push_back({first, false});
          break;
        }
        default:  // everything else pushes one item (constants, GLOBAL, GET, DUP, ...)
          stack_.push_back({i, false});
          break;
      }
    }
    return marks;
  }

 private:
  struct Item {
    size_t first_op;  // instruction that started building this item
    bool is_mark;
  };

  void need(size_t n, size_t i) const {
    size_t items = 0;
    for (auto it = stack_.rbegin(); it != stack_.rend() && !it->is_mark && items < n; ++it) {
      ++items;
    }
    if (items < n) malformed(i);
  }
  void pop(size_t n, size_t i) {
    need(n, i);
    stack_.resize(stack_.size() - n);
  }
  // Pops up to and including the topmost MARK; returns the MARK's instruction.
  size_t pop_to_mark(size_t i) {
    while (!stack_.empty() && !stack_.back().is_mark) stack_.pop_back();
    if (stack_.empty()) malformed(i);
    const size_t first = stack_.back().first_op;
    stack_.pop_back();
    return first;
  }
  [[noreturn]] void malformed(size_t i) const {
    throw InputError(fmt::format(
        "{}: cannot read the state_dict: malformed pickle program (opcode 0x{:02x} at byte {} "
        "finds too few items on the stack)",
        source_, ops_[i].code, ops_[i].begin));
  }

  const std::vector<Op>& ops_;
  const std::string& source_;
  std::vector<Item> stack_;
};

}  // namespace

std::vector<char> rewrite_state_dict_pickle(const std::vector<char>& pickle,
                                            const std::string& source_name) {
  const std::vector<Op> ops = OpReader(pickle, source_name).read_all();
  // The depth LibTorch's unpickler would build, bounded before it builds anything
  // (models/pickle_nesting.h).
  std::vector<PickleStep> steps;
  steps.reserve(ops.size());
  for (const Op& op : ops) steps.push_back({op.code, memo_index(pickle, op), op.begin});
  pickle_nesting_depth(steps, source_name);
  const std::vector<int> marks = StackSimulator(ops, source_name).marks_before();
  std::vector<char> out;
  out.reserve(pickle.size() + pickle.size() / 16);
  const auto copy = [&](const Op& op) {
    out.insert(out.end(), pickle.begin() + op.begin, pickle.begin() + op.end);
  };
  std::set<uint32_t> ordered_dict_memos;  // memo slots holding the OrderedDict class
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    out.insert(out.end(), static_cast<size_t>(marks[i]), static_cast<char>(kMark));
    const auto memo = memo_index(pickle, op);
    const bool class_push = is_ordered_dict_global(pickle, op) ||
                            (memo && !is_put(op) && ordered_dict_memos.count(*memo) > 0);
    if (class_push) {
      // OrderedDict [PUT n] () REDUCE  ->  {} [PUT n]: the memo slot keeps its number (a later
      // fetch of it is rewritten the same way), and the dict is what REDUCE would have produced.
      // Nothing inside the pattern starts a stack item that survives it, so no MARK lands there.
      size_t j = i + 1;
      const Op* put = nullptr;
      if (j < ops.size() && is_put(ops[j])) put = &ops[j++];
      if (j + 1 >= ops.size() || ops[j].code != kEmptyTuple || ops[j + 1].code != kReduce) {
        throw InputError(fmt::format(
            "{}: cannot read the state_dict: collections.OrderedDict at byte {} is used other "
            "than as OrderedDict(); re-save it with torch.save(dict(state_dict), f)",
            source_name, op.begin));
      }
      out.push_back(static_cast<char>(kEmptyDict));
      if (put != nullptr) {
        copy(*put);
        ordered_dict_memos.insert(*memo_index(pickle, *put));
      }
      i = j + 1;
      continue;
    }
    if (memo && is_put(op)) ordered_dict_memos.erase(*memo);
    if (op.code == kSetItem) {
      out.push_back(static_cast<char>(kSetItems));
    } else if (op.code == kAppend) {
      out.push_back(static_cast<char>(kAppends));
    } else if (op.code == kBuild && i + 2 == ops.size()) {
      // The top-level object's attributes (`_metadata`): keep them beside it instead of applying
      // them, which LibTorch cannot do to a dict.
      out.push_back(static_cast<char>(kTuple2));
    } else {
      copy(op);
    }
  }
  return out;
}

namespace {

bool starts_with_bytes(const std::vector<char>& bytes, const char* prefix, size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), prefix, n) == 0;
}

// What the bytes are when they are not a readable zip archive, for the message.
std::string why_not_an_archive(const std::vector<char>& bytes, const std::string& reader_error) {
  if (bytes.empty()) return "the file is empty";
  // A zip archive starts with a local file header; one whose central directory (at the end) is
  // gone was cut short: an interrupted download or copy.
  if (starts_with_bytes(bytes, "PK\x03\x04", 4)) {
    return fmt::format(
        "the file is truncated or damaged ({} bytes; a zip archive whose end cannot be read: {}); "
        "copy or save it again",
        bytes.size(), reader_error);
  }
  // torch.save before PyTorch 1.6, or with _use_new_zipfile_serialization=False: a bare pickle.
  if (static_cast<uint8_t>(bytes[0]) == 0x80) {
    return "the file is in torch.save's legacy (pre-1.6, non-zip) format; re-save it in Python "
           "with torch.save(torch.load(old), new)";
  }
  return "not a torch.save archive (not a zip file); save the weights with "
         "torch.save(model.state_dict(), f)";
}

// TorchScript archives (torch.jit.save) are zip files too, with code/ and constants.pkl beside a
// data.pkl that pickles the scripted module, not a state_dict.
bool is_torchscript_archive(caffe2::serialize::PyTorchStreamReader& reader) {
  if (reader.hasRecord("constants.pkl")) return true;
  for (const std::string& name : reader.getAllRecords()) {
    if (name.rfind("code/", 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<char> make_loadable_by_libtorch(const std::vector<char>& archive,
                                            const std::string& source_name) {
  namespace serialize = caffe2::serialize;
  std::unique_ptr<serialize::PyTorchStreamReader> opened;
  try {
    opened = std::make_unique<serialize::PyTorchStreamReader>(
        std::make_shared<serialize::MemoryReadAdapter>(archive.data(),
                                                       static_cast<off_t>(archive.size())));
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: cannot read the state_dict: {}", source_name,
                                 why_not_an_archive(archive, e.what_without_backtrace())));
  }
  serialize::PyTorchStreamReader& reader = *opened;
  if (is_torchscript_archive(reader)) {
    throw InputError(fmt::format(
        "{}: a TorchScript archive (torch.jit.save), not a state_dict; save the weights with "
        "torch.save(model.state_dict(), f) (for a scripted module m: torch.save(m.state_dict(), "
        "f))",
        source_name));
  }
  std::vector<char> out;
  try {
    if (!reader.hasRecord("data.pkl")) {
      throw InputError(fmt::format(
          "{}: not a torch.save archive (no data.pkl record); save with torch.save(state_dict, f)",
          source_name));
    }
    serialize::PyTorchStreamWriter writer([&out](const void* data, size_t n) -> size_t {
      const char* p = static_cast<const char*>(data);
      out.insert(out.end(), p, p + n);
      return n;
    });
    writer.setMinVersion(reader.version());
    for (const std::string& name : reader.getAllRecords()) {
      // The writer adds its own version record at the end.
      if (name == "version" || name == ".data/version") continue;
      at::DataPtr data;
      size_t size = 0;
      std::tie(data, size) = reader.getRecord(name);
      if (name == "data.pkl") {
        const char* p = static_cast<const char*>(data.get());
        const std::vector<char> program =
            rewrite_state_dict_pickle(std::vector<char>(p, p + size), source_name);
        writer.writeRecord(name, program.data(), program.size());
      } else {
        writer.writeRecord(name, data.get(), size);
      }
    }
    writer.writeEndOfFile();
  } catch (const c10::Error& e) {
    throw InputError(fmt::format(
        "{}: not a readable torch.save archive ({}); save with torch.save(state_dict, f) in the "
        "default (zip) format",
        source_name, e.what_without_backtrace()));
  }
  return out;
}

}  // namespace batchlab::models
