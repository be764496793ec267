// Times training steps. On the CPU a steady clock; on a CUDA device a pair of CUDA events recorded
// on the current stream (when built with CUDA), so the measured time is the device's time for the
// step's kernels and starting the timer costs no host synchronization: the host waits only when
// the time is read, which the trainer does at the point where it reads the step's metrics anyway.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>

namespace batchlab::train {

class StepTimer {
 public:
  explicit StepTimer(c10::Device device);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  void start();
  // Seconds since start(); waits for the device to reach this point.
  double stop();

  bool uses_device_events() const { return events_ != nullptr; }

 private:
  struct Events;  // CUDA events; defined only in CUDA builds
  std::chrono::steady_clock::time_point t0_;
  std::unique_ptr<Events> events_;
};

}  // namespace batchlab::train
