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
#include <string_view>
#include <tuple>

#include "core/errors.h"
#include "core/pickle_nesting.h"
#include "core/pickle_program.h"

namespace batchlab::models {
namespace {

using pickle::kAppend;
using pickle::kAppends;
using pickle::kBuild;
using pickle::kEmptyDict;
using pickle::kEmptyTuple;
using pickle::kGlobal;
using pickle::kMark;
using pickle::kReduce;
using pickle::kSetItem;
using pickle::kSetItems;
using pickle::kStop;
using pickle::kTuple2;
using pickle::Op;

std::string_view view_of(const std::vector<char>& bytes) { return {bytes.data(), bytes.size()}; }

std::optional<uint32_t> memo_index(const std::vector<char>& bytes, const Op& op) {
  return pickle::memo_index(view_of(bytes), op);
}

using pickle::is_put;

// The program's instructions (core/pickle_program.h), or an InputError naming the file.
std::vector<Op> instructions_of(const std::vector<char>& bytes, const std::string& source) {
  pickle::Program program = pickle::split_program(view_of(bytes));
  if (!program.problem.empty()) {
    throw InputError(fmt::format(
        "{}: cannot read the state_dict: {}{}", source, program.problem,
        program.unsupported_opcode ? "; save with torch.save's default pickle_protocol=2" : ""));
  }
  return std::move(program.ops);
}

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

// What LibTorch's unpickler would build too large, bounded before it builds anything: its memo
// table (core/pickle_program.h) and the depth of its objects (core/pickle_nesting.h).
void refuse_what_libtorch_would_overbuild(const std::vector<char>& pickle,
                                          const std::vector<Op>& ops,
                                          const std::string& source_name) {
  const std::string far_slot = pickle::memo_slot_problem(view_of(pickle), ops);
  if (!far_slot.empty()) {
    throw InputError(fmt::format(
        "{}: cannot read the state_dict: {}; torch.save numbers its memo slots from 0, so the file "
        "is damaged or was made to exhaust memory. Save the weights again with "
        "torch.save(model.state_dict(), path)",
        source_name, far_slot));
  }
  std::vector<pickle::PickleStep> steps;
  steps.reserve(ops.size());
  for (const Op& op : ops) steps.push_back({op.code, memo_index(pickle, op), op.begin});
  const std::string too_deep = pickle::pickle_nesting_problem(steps);
  if (!too_deep.empty()) {
    throw InputError(fmt::format(
        "{}: cannot read the state_dict: {}; a state_dict nests 5 or 6 levels, so the file is "
        "damaged or was made to crash readers. Save the weights again with "
        "torch.save(model.state_dict(), path) or safetensors.torch.save_file",
        source_name, too_deep));
  }
}

}  // namespace

std::vector<char> rewrite_state_dict_pickle(const std::vector<char>& pickle,
                                            const std::string& source_name) {
  const std::vector<Op> ops = instructions_of(pickle, source_name);
  refuse_what_libtorch_would_overbuild(pickle, ops, source_name);
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
