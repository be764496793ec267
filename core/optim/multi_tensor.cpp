#include "core/optim/multi_tensor.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>  // TMP
#include <exception>
#include <memory>
#include <mutex>

namespace batchlab::optim::detail {

std::vector<Chunk> plan_chunks(const std::vector<int64_t>& numels, std::vector<int64_t>* first) {
  std::vector<Chunk> chunks;
  if (first != nullptr) first->assign(numels.size() + 1, 0);
  for (size_t i = 0; i < numels.size(); ++i) {
    if (first != nullptr) (*first)[i] = static_cast<int64_t>(chunks.size());
    for (int64_t b = 0; b < numels[i]; b += kChunkElements) {
      chunks.push_back({static_cast<int64_t>(i), b, std::min(numels[i], b + kChunkElements)});
    }
  }
  if (first != nullptr) first->back() = static_cast<int64_t>(chunks.size());
  return chunks;
}

std::vector<std::pair<int64_t, int64_t>> plan_waves(const std::vector<int64_t>& bytes,
                                                    int64_t budget) {
  std::vector<std::pair<int64_t, int64_t>> waves;
  const int64_t n = static_cast<int64_t>(bytes.size());
  int64_t begin = 0;
  int64_t used = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i > begin && used + bytes[i] > budget) {
      waves.emplace_back(begin, i);
      begin = i;
      used = 0;
    }
    used += bytes[i];
  }
  if (begin < n) waves.emplace_back(begin, n);
  return waves;
}

void run_two_pass(const TwoPassWork& work, int64_t wave_bytes) {
  if (const char* e = std::getenv("BATCHLAB_WAVE_BYTES_TMP")) wave_bytes = std::atoll(e);  // TMP
  const auto waves = plan_waves(work.bytes, wave_bytes);
  std::vector<int64_t> numels;
  std::vector<int64_t> first;
  std::vector<double> partial;
  for (const auto& [begin, end] : waves) {
    // Pass 1 over this wave's items that need it.
    numels.assign(static_cast<size_t>(end - begin), 0);
    bool any = false;
    for (int64_t i = begin; i < end; ++i) {
      if (work.in_first[i]) numels[i - begin] = work.numels[i];
      any = any || work.in_first[i];
    }
    if (any) {
      std::vector<Chunk> chunks = plan_chunks(numels, &first);
      partial.assign(2 * chunks.size(), 0.0);
      parallel_ranges(static_cast<int64_t>(chunks.size()), [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          Chunk ch = chunks[c];
          ch.item += begin;
          work.first(ch, &partial[2 * c]);
        }
      });
      for (int64_t i = begin; i < end; ++i) {
        if (!work.in_first[i]) continue;
        double sums[2] = {0.0, 0.0};
        for (int64_t c = first[i - begin]; c < first[i - begin + 1]; ++c) {
          sums[0] += partial[2 * c];
          sums[1] += partial[2 * c + 1];
        }
        work.between(i, sums);
      }
    }
    // Pass 2 while the wave is still in cache.
    for (int64_t i = begin; i < end; ++i) {
      numels[i - begin] = work.in_second[i] ? work.numels[i] : 0;
    }
    const std::vector<Chunk> chunks = plan_chunks(numels, nullptr);
    parallel_ranges(static_cast<int64_t>(chunks.size()), [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        Chunk ch = chunks[c];
        ch.item += begin;
        work.second(ch);
      }
    });
  }
}

#ifdef _OPENMP

void parallel_ranges(int64_t count, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  at::parallel_for(0, count, 1, fn);
}

#else

namespace {

// State shared with the pool tasks. A task that starts after the call returned (the pool was busy)
// finds no piece left and touches nothing but this, which it co-owns.
struct FanOut {
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;
};

}  // namespace

void parallel_ranges(int64_t count, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  const int64_t threads = std::min<int64_t>(at::get_num_threads(), count);
  if (threads <= 1 || at::in_parallel_region()) {
    fn(0, count);
    return;
  }
  // A few pieces per thread: a pool thread that starts late still leaves the work evenly shared.
  const int64_t pieces = std::min<int64_t>(count, threads * 4);
  auto state = std::make_shared<FanOut>();
  auto work = [state, pieces, count, &fn]() {
    for (;;) {
      const int64_t p = state->next.fetch_add(1);
      if (p >= pieces) return;
      try {
        fn(p * count / pieces, (p + 1) * count / pieces);
      } catch (...) {
        std::lock_guard<std::mutex> lock(state->mu);
        if (!state->error) state->error = std::current_exception();
      }
      if (state->done.fetch_add(1) + 1 == pieces) {
        std::lock_guard<std::mutex> lock(state->mu);
        state->cv.notify_all();
      }
    }
  };
  for (int64_t t = 1; t < threads; ++t) at::launch(work);
  work();
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->done.load() == pieces; });
  if (state->error) std::rethrow_exception(state->error);
}

#endif  // _OPENMP

bool fusable(std::initializer_list<const at::Tensor*> tensors) {
  const at::Tensor& p = **tensors.begin();
  if (!p.defined() || !p.device().is_cpu() || p.layout() != at::kStrided) return false;
  const at::ScalarType dtype = p.scalar_type();
  if (dtype != at::kFloat && dtype != at::kDouble) return false;
  if (!p.is_non_overlapping_and_dense()) return false;
  for (const at::Tensor* t : tensors) {
    if (!t->defined() || t->device() != p.device() || t->layout() != at::kStrided ||
        t->scalar_type() != dtype || t->sizes() != p.sizes() || t->strides() != p.strides()) {
      return false;
    }
  }
  return true;
}

void bump_version(const at::Tensor& t) {
  if (t.defined() && !t.is_inference()) t.unsafeGetTensorImpl()->bump_version();
}

}  // namespace batchlab::optim::detail
