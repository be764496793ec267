// Multi-tensor plumbing for the fused optimizer steps (the CPU analogue of apex's
// multi_tensor_apply).
//
// A step touches many tensors of very different sizes (ResNet-50: 161 tensors from 64 to 2.4M
// elements). Launching one parallel loop per tensor would pay the fork/join cost hundreds of times
// per pass and leave threads idle on the small ones, so tensors are cut into chunks of at most
// kChunkElements and one parallel loop runs over the chunks of many tensors at once. Chunk
// boundaries depend only on the tensor sizes, and per-chunk partial sums are added in chunk order,
// so a norm is bitwise the same whatever the thread count.
//
// LARS and LAMB need two passes per tensor (norms, then the update that uses them). Running the
// first pass over ALL tensors and then the second would stream every array from DRAM twice. Instead
// the tensors are taken in waves of about kWaveBytes: both passes run over one wave before the
// next, so the second pass finds the arrays the first one read still in the last-level cache, and
// DRAM sees each array about once (LARS: 5 array passes instead of 7; LAMB: 8 instead of 11).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

namespace batchlab::optim::detail {

// 32K elements: 128 KiB of float per array, a few arrays of which fit in L2 while a chunk is worked
// on, and about 800 chunks for ResNet-50 (enough to balance two to a few dozen threads).
inline constexpr int64_t kChunkElements = int64_t{1} << 15;

struct Chunk {
  int64_t item = 0;   // index into the caller's list of tensors
  int64_t begin = 0;  // element range [begin, end) of that tensor
  int64_t end = 0;
};

// Chunks of every item in order; items with numel 0 get none. first[i] is the index of item i's
// first chunk and first[i + 1] - first[i] its chunk count (first has numels.size() + 1 entries).
std::vector<Chunk> plan_chunks(const std::vector<int64_t>& numels, std::vector<int64_t>* first);

// Bytes the first pass of one wave may touch: well inside a typical server L3 (32 MiB here, shared
// by all cores and other processes), large enough that a wave has hundreds of chunks to share out.
inline constexpr int64_t kWaveBytes = int64_t{8} << 20;

// Consecutive items grouped so that each group's bytes stay within `budget` (an item larger than
// that is a group of its own): [begin, end) index ranges covering all items in order.
std::vector<std::pair<int64_t, int64_t>> plan_waves(const std::vector<int64_t>& bytes,
                                                    int64_t budget);

// The two-pass driver. Items are tensors of numels[i] elements and first-pass footprint bytes[i].
// Per wave: first(chunk, partial) on every chunk of items with in_first[i], in parallel, each chunk
// writing two sums to partial[0..1]; then, for each such item, between(item, sums) with the item's
// two sums added in chunk order; then second(chunk) on every chunk of items with in_second[i], in
// parallel.
struct TwoPassWork {
  std::vector<int64_t> numels;
  std::vector<int64_t> bytes;
  std::vector<bool> in_first;
  std::vector<bool> in_second;
  std::function<void(const Chunk&, double* partial)> first;
  std::function<void(int64_t item, const double sums[2])> between;
  std::function<void(const Chunk&)> second;
};
void run_two_pass(const TwoPassWork& work, int64_t wave_bytes = kWaveBytes);

// Runs fn(begin, end) over sub-ranges of [0, count) on the intra-op threads
// (at::get_num_threads()). With OpenMP enabled at compile time this is at::parallel_for. Without
// it, at::parallel_for compiles to a plain serial loop in code outside libtorch (ATen's OpenMP
// backend is header-inline), so the ranges are then fanned out over ATen's inter-op pool
// (at::launch) instead, with the calling thread working too. Exceptions from fn are rethrown on the
// calling thread.
void parallel_ranges(int64_t count, const std::function<void(int64_t, int64_t)>& fn);

// True when the tensors can be handled as flat arrays by the fused CPU loops: all defined, on the
// CPU, strided, float or double, the same dtype, sizes and strides, non-overlapping and dense. The
// first tensor is the parameter; the others (grad, optimizer state) are compared with it.
bool fusable(std::initializer_list<const at::Tensor*> tensors);

// Whether a parameter's trust ratio can be written by the fused CPU loops: not made yet (the
// fused step makes it on the host), or already a double scalar on the CPU. One a multi-tensor step
// left on another device keeps the parameter off the fused path (LAMB and LARS share the rule).
inline bool fusable_trust_ratio(const at::Tensor& trust_ratio) {
  return !trust_ratio.defined() ||
         (trust_ratio.device().is_cpu() && trust_ratio.scalar_type() == at::kDouble);
}

// Marks an in-place change made through a raw pointer, as ATen's in-place ops do, so autograd can
// detect a tensor modified after it was saved for backward.
void bump_version(const at::Tensor& t);

}  // namespace batchlab::optim::detail
