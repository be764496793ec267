#include "core/pickle_nesting.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace batchlab::pickle {
namespace {

using Node = uint32_t;
constexpr Node kMark = UINT32_MAX;  // a MARK on the stack, not an object

class ObjectGraph {
 public:
  ObjectGraph() = default;

  // Runs the program; false when its stack ran short (malformed: the caller reports it).
  bool run(const std::vector<PickleStep>& steps) {
    for (const PickleStep& s : steps) {
      if (!step(s)) return false;
    }
    return true;
  }

  // Walks the longest chain of "holds" from every node, by an iterative depth-first walk (the
  // graph can be as deep as the program is long, so no recursion here either); why it cannot be
  // read, or empty.
  std::string problem() const {
    enum : uint8_t { kNew, kOpen, kDone };
    std::vector<uint8_t> state(children_.size(), kNew);
    std::vector<size_t> height(children_.size(), 1);
    for (Node root = 0; root < children_.size(); ++root) {
      if (state[root] != kNew) continue;
      std::vector<std::pair<Node, size_t>> path{{root, 0}};  // node, next child to visit
      state[root] = kOpen;
      while (!path.empty()) {
        auto& [node, next] = path.back();
        if (next < children_[node].size()) {
          const Node child = children_[node][next++];
          if (state[child] == kOpen) return "an object holds itself (a cycle through the memo)";
          if (state[child] == kNew) {
            state[child] = kOpen;
            path.emplace_back(child, 0);
          }
          continue;
        }
        for (const Node child : children_[node]) {
          height[node] = std::max(height[node], height[child] + 1);
        }
        if (height[node] > kMaxPickleDepth) {
          return fmt::format("its objects nest more than {} levels deep", kMaxPickleDepth);
        }
        state[node] = kDone;
        path.pop_back();
      }
    }
    return {};
  }

 private:
  bool step(const PickleStep& s) {
    switch (s.code) {
      case '(':  // MARK
        stack_.push_back(kMark);
        return true;
      case '.':
      case 0x80:  // STOP PROTO
        return true;
      case 'q':
      case 'r':
      case 'p':  // PUT forms: the slot names the object on top
        if (!has(1)) return false;
        if (s.memo) memo_[*s.memo] = stack_.back();
        return true;
      case 'h':
      case 'j':
      case 'g': {  // GET forms: the same object again
        const auto it = s.memo ? memo_.find(*s.memo) : memo_.end();
        stack_.push_back(it != memo_.end() ? it->second : leaf());
        return true;
      }
      case '2':  // DUP
        if (!has(1)) return false;
        stack_.push_back(stack_.back());
        return true;
      case '0':  // POP
        if (!has(1)) return false;
        stack_.pop_back();
        return true;
      case '1':  // POP_MARK
        return to_mark().has_value();
      case 's':    // SETITEM: dict key value
      case 'a':    // APPEND: list value
      case 'b': {  // BUILD: object state
        const size_t n = s.code == 's' ? 2 : 1;
        if (!has(n + 1)) return false;
        const Node holder = stack_[stack_.size() - n - 1];
        for (size_t i = 0; i < n; ++i) hold(holder, stack_[stack_.size() - 1 - i]);
        stack_.resize(stack_.size() - n);
        return true;
      }
      case 'u':
      case 'e': {  // SETITEMS APPENDS: the items above the MARK go into the object below it
        const auto items = to_mark();
        if (!items || !has(1)) return false;
        for (const Node item : *items) hold(stack_.back(), item);
        return true;
      }
      case 't':
      case 'l':
      case 'd':
      case 'i':
      case 'o': {  // TUPLE LIST DICT INST OBJ: a new object of the items above the MARK
        const auto items = to_mark();
        if (!items) return false;
        push_built(*items);
        return true;
      }
      case 'Q':
      case 0x85:  // BINPERSID TUPLE1
        return build_from(1);
      case 0x86:
      case 'R':
      case 0x81:  // TUPLE2 REDUCE NEWOBJ
        return build_from(2);
      case 0x87:  // TUPLE3
        return build_from(3);
      default:  // constants, GLOBAL, EMPTY_* ...: a new object holding nothing yet
        stack_.push_back(leaf());
        return true;
    }
  }

  bool build_from(size_t n) {
    if (!has(n)) return false;
    std::vector<Node> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    push_built(items);
    return true;
  }

  void push_built(const std::vector<Node>& items) {
    const Node node = leaf();
    for (const Node item : items) hold(node, item);
    stack_.push_back(node);
  }

  Node leaf() {
    children_.emplace_back();
    return static_cast<Node>(children_.size() - 1);
  }

  void hold(Node holder, Node item) { children_[holder].push_back(item); }

  // Whether the top `n` entries are objects (no MARK among them).
  bool has(size_t n) const {
    if (stack_.size() < n) return false;
    return std::find(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end(), kMark) ==
           stack_.end();
  }

  // Pops to and including the topmost MARK; the objects above it, bottom first.
  std::optional<std::vector<Node>> to_mark() {
    const auto mark = std::find(stack_.rbegin(), stack_.rend(), kMark);
    if (mark == stack_.rend()) return std::nullopt;
    const auto first = mark.base();  // just above the MARK
    std::vector<Node> items(first, stack_.end());
    stack_.erase(first - 1, stack_.end());
    return items;
  }

  std::vector<Node> stack_;
  std::vector<std::vector<Node>> children_;
  std::unordered_map<uint32_t, Node> memo_;
};

}  // namespace

std::string pickle_nesting_problem(const std::vector<PickleStep>& steps) {
  ObjectGraph graph;
  graph.run(steps);
  return graph.problem();
}

}  // namespace batchlab::pickle
