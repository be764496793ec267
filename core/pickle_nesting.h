// How deep the object a pickle program builds nests, found by running its stack discipline over a
// graph of the objects (not their values) before LibTorch's unpickler builds them.
//
// Why: LibTorch's unpickler builds any depth, and an IValue list or dict is destroyed (and
// printed, and converted) recursively, so a 400 KB data.pkl of 200,000 nested lists
// (`] ] ] ... a a a`) would end batchlab with a stack overflow. A state_dict nests 5 or 6 levels
// (the dict, a tensor's REDUCE, its argument tuple, the persistent id tuple, ...); batchlab refuses
// more than 128, the bound it uses for JSON and TOML. The same walk guards checkpoints (their
// data.pkl nests about as deep).
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

namespace batchlab::pickle {

inline constexpr size_t kMaxPickleDepth = 128;

// One instruction as the measure needs it: its opcode, its memo slot (the GET and PUT forms), and
// where it starts (for messages).
struct PickleStep {
  uint8_t code = 0;
  std::optional<uint32_t> memo;
  size_t offset = 0;
};

// Why the objects `steps` build cannot be read: nesting deeper than kMaxPickleDepth (a leaf is 1),
// or an object that holds itself; empty when neither. The callers (models/state_dict_pickle.h,
// core/train/checkpoint_pickles.h) name the file and throw their own error. A program whose stack
// runs short is left to the caller's own check (what was measured so far is judged).
std::string pickle_nesting_problem(const std::vector<PickleStep>& steps);

}  // namespace batchlab::pickle
