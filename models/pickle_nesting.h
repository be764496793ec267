// How deep the object a pickle program builds nests, found by running its stack discipline over a
// graph of the objects (not their values) before LibTorch's unpickler builds them.
//
// Why: LibTorch's unpickler builds any depth, and an IValue list or dict is destroyed (and
// printed, and converted) recursively, so a 400 KB data.pkl of 200,000 nested lists
// (`] ] ] ... a a a`) would end batchlab with a stack overflow. A state_dict nests 5 or 6 levels
// (the dict, a tensor's REDUCE, its argument tuple, the persistent id tuple, ...); batchlab refuses
// more than 128, the bound it uses for JSON and TOML.
//
// Objects are nodes, "holds" relations are edges: a container gets an edge to what APPEND(S) and
// SETITEM(S) put in it, a built object (TUPLE*, LIST, DICT, REDUCE, NEWOBJ, BINPERSID) to its
// arguments, and BUILD gives the object an edge to its state. Memo fetches (BINGET, LONG_BINGET)
// and DUP push the same node again, so a container filled after it was memoized (every
// torch.save dict) is measured with what it holds at the end; a cycle (an object holding itself)
// is refused too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchlab::models {

inline constexpr size_t kMaxPickleDepth = 128;

// One instruction as the measure needs it: its opcode, its memo slot (the GET and PUT forms), and
// where it starts (for messages).
struct PickleStep {
  uint8_t code = 0;
  std::optional<uint32_t> memo;
  size_t offset = 0;
};

// The depth of the deepest object `steps` build (a leaf is 1). Throws InputError naming
// `source_name` when it exceeds kMaxPickleDepth or an object holds itself; a program whose stack
// runs short is left to the caller's own check (it returns what it measured so far).
size_t pickle_nesting_depth(const std::vector<PickleStep>& steps, const std::string& source_name);

}  // namespace batchlab::models
