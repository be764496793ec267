#include "core/train/step_timer.h"

#ifdef BATCHLAB_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace batchlab::train {

#ifdef BATCHLAB_WITH_CUDA
struct StepTimer::Events {
  explicit Events(c10::DeviceIndex index) : device(index) {}
  c10::DeviceIndex device;
  at::cuda::CUDAEvent begin{cudaEventDefault};  // timing enabled (not cudaEventDisableTiming)
  at::cuda::CUDAEvent end{cudaEventDefault};
};
#else
struct StepTimer::Events {};
#endif

StepTimer::StepTimer(c10::Device device) {
#ifdef BATCHLAB_WITH_CUDA
  if (device.is_cuda()) events_ = std::make_unique<Events>(device.has_index() ? device.index() : 0);
#else
  (void)device;
#endif
}

StepTimer::~StepTimer() = default;

void StepTimer::start() {
  total_s_ = 0.0;
  resume();
}

void StepTimer::resume() {
#ifdef BATCHLAB_WITH_CUDA
  if (events_) {
    c10::cuda::CUDAGuard guard(events_->device);
    events_->begin.record();
    return;
  }
#endif
  t0_ = std::chrono::steady_clock::now();
}

double StepTimer::elapsed_s() {
#ifdef BATCHLAB_WITH_CUDA
  if (events_) {
    c10::cuda::CUDAGuard guard(events_->device);
    events_->end.record();
    events_->end.synchronize();
    return static_cast<double>(events_->begin.elapsed_time(events_->end)) / 1000.0;
  }
#endif
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void StepTimer::pause() { total_s_ += elapsed_s(); }

double StepTimer::stop() { return total_s_ + elapsed_s(); }

}  // namespace batchlab::train
