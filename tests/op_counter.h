// Counts, on the calling thread, the ATen operators a piece of code dispatches and the ones among
// them that read a device value to the host behind the caller's back. Shared by the tests that
// check the optimizer steps' launch counts and the training step's host reads.
//
// Uses LibTorch's RecordFunction observers (what the profiler uses), so it sees every operator
// called through the dispatcher, on CPU tensors too: what a step dispatches on the CPU is what it
// would launch on a GPU (a `_foreach_*` op is one operator here and a few multi-tensor kernel
// launches there). Only top-level operators count as dispatched (an op called from inside another,
// such as the per-tensor loop of a `_foreach_*` op's CPU fallback, is the outer op's business);
// implicit reads count at any depth.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <cstring>
#include <memory>

namespace batchlab::test_util {

class OpCounter {
 public:
  OpCounter() {
    state() = {};
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&OpCounter::on_start, &OpCounter::on_end)
            .scopes({at::RecordScope::FUNCTION}));
  }
  ~OpCounter() { at::removeCallback(handle_); }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  void reset() { state() = {}; }
  // Top-level operators dispatched since construction or reset().
  int64_t ops() const { return state().ops; }
  // Operators that read device memory on the host: .item() (_local_scalar_dense) and the ops whose
  // output size depends on the data (nonzero, masked_select): each is a device sync on a GPU.
  int64_t implicit_reads() const { return state().implicit_reads; }

 private:
  struct State {
    int64_t depth = 0;
    int64_t ops = 0;
    int64_t implicit_reads = 0;
  };
  static State& state() {
    thread_local State s;
    return s;
  }
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    State& s = state();
    if (s.depth == 0) ++s.ops;
    ++s.depth;
    const char* name = fn.name();
    if (std::strcmp(name, "aten::_local_scalar_dense") == 0 ||
        std::strcmp(name, "aten::nonzero") == 0 || std::strcmp(name, "aten::masked_select") == 0) {
      ++s.implicit_reads;
    }
    return nullptr;
  }
  static void on_end(const at::RecordFunction&, at::ObserverContext*) { --state().depth; }

  at::CallbackHandle handle_;
};

}  // namespace batchlab::test_util
