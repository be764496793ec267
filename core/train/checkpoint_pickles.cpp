#include "core/train/checkpoint_pickles.h"

#include <c10/util/Exception.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/errors.h"
#include "core/pickle_nesting.h"
#include "core/pickle_program.h"
#include "core/train/checkpoint_code.h"

namespace batchlab::train {
namespace {

using pickle::Op;

// Bytes per element of a storage class LibTorch's pickler names; 1 (the smallest) for one it does
// not, so the size check still holds as a lower bound.
size_t element_size(std::string_view global) {
  static const std::map<std::string_view, size_t> kSizes = {
      {"torch\nDoubleStorage\n", 8},       {"torch\nFloatStorage\n", 4},
      {"torch\nHalfStorage\n", 2},         {"torch\nBFloat16Storage\n", 2},
      {"torch\nLongStorage\n", 8},         {"torch\nIntStorage\n", 4},
      {"torch\nShortStorage\n", 2},        {"torch\nCharStorage\n", 1},
      {"torch\nByteStorage\n", 1},         {"torch\nBoolStorage\n", 1},
      {"torch\nComplexFloatStorage\n", 8}, {"torch\nComplexDoubleStorage\n", 16},
      {"torch\nQInt32Storage\n", 4}};
  const auto it = kSizes.find(global);
  return it == kSizes.end() ? 1 : it->second;
}

bool is_tensor_rebuild(std::string_view global) {
  return global == "torch._utils\n_rebuild_tensor_v2\n" ||
         global == "torch._utils\n_rebuild_qtensor\n";
}

// What the walk knows of a value: enough to check storages and the tensors viewing them.
struct Value {
  enum Kind : uint8_t { kOther, kInt, kString, kGlobal, kTuple, kStorage } kind = kOther;
  int64_t number = 0;           // kInt: the value; kStorage: its element count
  std::string_view text;        // kString: the bytes; kGlobal: "module\nname\n"
  std::vector<uint32_t> items;  // kTuple
};

constexpr uint32_t kMarkValue = UINT32_MAX;

struct Refusal {
  std::string why;
};

// Runs one program's stack discipline over the values above.
class Walk {
 public:
  Walk(std::string_view bytes, const std::vector<Op>& ops, std::string prefix,
       caffe2::serialize::PyTorchStreamReader& reader)
      : bytes_(bytes), ops_(ops), prefix_(std::move(prefix)), reader_(reader) {}

  void run() {
    for (const Op& op : ops_) step(op);
  }

 private:
  void step(const Op& op) {
    switch (op.code) {
      case '(':
        stack_.push_back(kMarkValue);
        return;
      case '.':
      case 0x80:
        return;
      case 'q':
      case 'r':
      case 'p':
        put(op);
        return;
      case 'h':
      case 'j':
      case 'g': {
        const auto slot = pickle::memo_index(bytes_, op);
        const auto it = slot ? memo_.find(*slot) : memo_.end();
        stack_.push_back(it == memo_.end() ? other() : it->second);
        return;
      }
      case '2':
        stack_.push_back(top(op, 1).front());
        return;
      case '0':
      case 'a':
      case 'b':
        pop(op, 1);
        return;
      case 's':
        pop(op, 2);
        return;
      case '1':
        to_mark(op);
        return;
      case 'u':
      case 'e':
        to_mark(op);
        top(op, 1);
        return;
      case 't':
        stack_.push_back(tuple(to_mark(op)));
        return;
      case 0x85:
      case 0x86:
      case 0x87:
        stack_.push_back(tuple(pop(op, op.code - 0x84)));
        return;
      case ')':
        stack_.push_back(tuple({}));
        return;
      case 'l':
      case 'd':
      case 'i':
      case 'o':
        to_mark(op);
        stack_.push_back(other());
        return;
      case 'Q':
        stack_.push_back(storage(pop(op, 1).front(), op));
        return;
      case 'R': {
        const std::vector<uint32_t> call = pop(op, 2);
        check_tensor(call[0], call[1], op);
        stack_.push_back(other());
        return;
      }
      case 0x81:
        pop(op, 2);
        stack_.push_back(other());
        return;
      case 'c':
        stack_.push_back(
            add({Value::kGlobal, 0, bytes_.substr(op.arg_begin, op.end - op.arg_begin), {}}));
        return;
      case 'X':
      case 'U':
      case 'T':
      case 'B':
      case 'C':
        stack_.push_back(add({Value::kString, 0, pickle::counted_bytes(bytes_, op), {}}));
        return;
      default: {
        const auto number = pickle::integer_value(bytes_, op);
        stack_.push_back(number ? add({Value::kInt, *number, {}, {}}) : other());
        return;
      }
    }
  }

  // Slots past the program's length were refused before the walk (pickle::memo_slot_problem).
  void put(const Op& op) {
    const uint32_t value = top(op, 1).front();
    const auto slot = pickle::memo_index(bytes_, op);
    if (slot) memo_[*slot] = value;
  }

  uint32_t storage(uint32_t id, const Op& op) {
    const Value& pid = values_[id];
    if (pid.kind != Value::kTuple || pid.items.size() != 5) return other();
    const Value& tag = values_[pid.items[0]];
    const Value& type = values_[pid.items[1]];
    const Value& key = values_[pid.items[2]];
    const Value& numel = values_[pid.items[4]];
    if (tag.kind != Value::kString || tag.text != "storage" || key.kind != Value::kString ||
        numel.kind != Value::kInt) {
      return other();
    }
    const size_t size = type.kind == Value::kGlobal ? element_size(type.text) : 1;
    const std::string record = prefix_ + std::string(key.text);
    if (numel.number < 0) {
      throw Refusal{fmt::format("the storage at byte {} ({}) claims {} elements", op.begin, record,
                                numel.number)};
    }
    // A record LibTorch cannot find is its own error; one that exists must hold the storage.
    if (numel.number > 0 && reader_.hasRecord(record)) {
      const size_t bytes = reader_.getRecordSize(record);
      if (static_cast<uint64_t>(numel.number) > bytes / size) {
        throw Refusal{fmt::format(
            "the storage at byte {} claims {} elements of {} bytes, but its record {} holds {} "
            "bytes",
            op.begin, numel.number, size, record, bytes)};
      }
    }
    return add({Value::kStorage, numel.number, {}, {}});
  }

  // _rebuild_tensor_v2(storage, offset, sizes, strides, ...): every element inside the storage.
  void check_tensor(uint32_t callable, uint32_t args, const Op& op) {
    const Value& f = values_[callable];
    const Value& a = values_[args];
    if (f.kind != Value::kGlobal || !is_tensor_rebuild(f.text) || a.kind != Value::kTuple ||
        a.items.size() < 4) {
      return;
    }
    const Value& storage = values_[a.items[0]];
    const Value& offset = values_[a.items[1]];
    const std::vector<int64_t> sizes = ints(a.items[2]);
    const std::vector<int64_t> strides = ints(a.items[3]);
    if (storage.kind != Value::kStorage || offset.kind != Value::kInt) return;
    const auto bad = [&](const std::string& why) {
      return Refusal{fmt::format("the tensor built at byte {} {}", op.begin, why)};
    };
    if (sizes.size() != strides.size()) throw bad("has sizes and strides of different lengths");
    if (offset.number < 0) throw bad(fmt::format("starts at offset {}", offset.number));
    // The last element's index, in unsigned 128-bit arithmetic (no sum of 64-bit values wraps).
    unsigned __int128 last = static_cast<uint64_t>(offset.number);
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0 || strides[d] < 0) {
        throw bad(
            fmt::format("has size {} and stride {} in dimension {}", sizes[d], strides[d], d));
      }
      if (sizes[d] == 0) return;  // no elements: nothing is read
      last += static_cast<unsigned __int128>(sizes[d] - 1) * static_cast<uint64_t>(strides[d]);
    }
    if (last >= static_cast<uint64_t>(storage.number)) {
      throw bad(fmt::format("reaches past the end of its storage of {} elements", storage.number));
    }
  }

  // The integers of a tuple of integers; an empty list for anything else (checked no further).
  std::vector<int64_t> ints(uint32_t id) const {
    std::vector<int64_t> out;
    const Value& v = values_[id];
    if (v.kind != Value::kTuple) return out;
    for (const uint32_t item : v.items) {
      if (values_[item].kind != Value::kInt) return {};
      out.push_back(values_[item].number);
    }
    return out;
  }

  uint32_t tuple(std::vector<uint32_t> items) {
    return add({Value::kTuple, 0, {}, std::move(items)});
  }
  uint32_t other() { return add({}); }
  uint32_t add(Value v) {
    values_.push_back(std::move(v));
    return static_cast<uint32_t>(values_.size() - 1);
  }

  // The top `n` values (no MARK among them), bottom first; refused when there are fewer.
  std::vector<uint32_t> top(const Op& op, size_t n) const {
    if (stack_.size() < n) malformed(op);
    std::vector<uint32_t> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    for (const uint32_t item : items) {
      if (item == kMarkValue) malformed(op);
    }
    return items;
  }
  std::vector<uint32_t> pop(const Op& op, size_t n) {
    std::vector<uint32_t> items = top(op, n);
    stack_.resize(stack_.size() - n);
    return items;
  }
  std::vector<uint32_t> to_mark(const Op& op) {
    size_t mark = stack_.size();
    while (mark > 0 && stack_[mark - 1] != kMarkValue) --mark;
    if (mark == 0) malformed(op);
    if (stack_.size() - mark > kMaxContainerItems) {
      throw Refusal{
          fmt::format("the instruction at byte {} puts {} items into one object (at "
                      "most {} are read)",
                      op.begin, stack_.size() - mark, kMaxContainerItems)};
    }
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark - 1);
    return items;
  }
  [[noreturn]] static void malformed(const Op& op) {
    throw Refusal{fmt::format(
        "malformed pickle program (opcode 0x{:02x} at byte {} finds too few items on the stack)",
        op.code, op.begin)};
  }

  std::string_view bytes_;
  const std::vector<Op>& ops_;
  std::string prefix_;
  caffe2::serialize::PyTorchStreamReader& reader_;
  std::vector<Value> values_;
  std::vector<uint32_t> stack_;
  std::unordered_map<uint32_t, uint32_t> memo_;
};

bool ends_with(const std::string& name, std::string_view suffix) {
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// data.pkl and constants.pkl, and the debug tables of the TorchScript source
// (code/...py.debug_pkl): LibTorch unpickles a source's table to point at the line when the source
// does not compile, so a table's claims are allocated like data.pkl's (found by fuzz_checkpoint: a
// string of 1.7 GB claimed in a 2.6 KB file whose code/ record did not lex).
bool is_pickle(const std::string& name) {
  return ends_with(name, ".pkl") || ends_with(name, ".debug_pkl");
}

// Where the storages a pickle names are: data.pkl's under data/. A debug table has none.
std::string storage_prefix(const std::string& name) {
  return (ends_with(name, ".pkl") ? name.substr(0, name.size() - 4) : name) + "/";
}

// Why the program in `bytes` (record `name`) cannot be read safely, or empty.
std::string problem_of(std::string_view bytes, const std::string& name,
                       caffe2::serialize::PyTorchStreamReader& reader) {
  const pickle::Program program = pickle::split_program(bytes);
  if (!program.problem.empty()) return program.problem;
  std::string memo = pickle::memo_slot_problem(bytes, program.ops);
  if (!memo.empty()) return memo;
  std::vector<pickle::PickleStep> steps;
  steps.reserve(program.ops.size());
  for (const Op& op : program.ops) {
    steps.push_back({op.code, pickle::memo_index(bytes, op), op.begin});
  }
  std::string deep = pickle::pickle_nesting_problem(steps);
  if (!deep.empty()) return deep;
  try {
    Walk(bytes, program.ops, storage_prefix(name), reader).run();
  } catch (const Refusal& refusal) {
    return refusal.why;
  }
  return {};
}

}  // namespace

void check_checkpoint_pickles(const std::string& payload, const std::string& path) {
  namespace serialize = caffe2::serialize;
  std::unique_ptr<serialize::PyTorchStreamReader> reader;
  try {
    reader = std::make_unique<serialize::PyTorchStreamReader>(
        std::make_shared<serialize::MemoryReadAdapter>(payload.data(),
                                                       static_cast<off_t>(payload.size())));
  } catch (const c10::Error&) {
    return;  // not an archive: LibTorch's load says so, and open_archive reports it
  }
  for (const std::string& name : reader->getAllRecords()) {
    std::string problem;
    try {
      // LibTorch writes records uncompressed, so none is larger than the archive; a record whose
      // directory entry claims more (a deflated zip bomb, or a forged size) would be allocated
      // whole before a byte of it is read.
      const size_t claimed = reader->getRecordSize(name);
      if (claimed > payload.size()) {
        problem = fmt::format("its zip entry claims {} bytes in an archive of {}", claimed,
                              payload.size());
      } else if (is_pickle(name)) {
        auto [data, size] = reader->getRecord(name);
        problem =
            problem_of(std::string_view(static_cast<const char*>(data.get()), size), name, *reader);
      } else if (name.rfind("code/", 0) == 0) {
        auto [data, size] = reader->getRecord(name);
        problem =
            checkpoint_code_problem(std::string_view(static_cast<const char*>(data.get()), size));
      }
    } catch (const c10::Error& e) {
      problem = e.what_without_backtrace();
    }
    if (!problem.empty()) {
      throw CheckpointError(fmt::format(
          "{}: record {} of the checkpoint cannot be read safely: {}; the file is damaged or was "
          "not written by batchlab",
          path, name, problem));
    }
  }
}

}  // namespace batchlab::train
