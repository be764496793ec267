// Times training steps. On the CPU a steady clock; on a CUDA device a pair of CUDA events recorded
// on the current stream (when built with CUDA), so the measured time is the device's time for the
// step's kernels and starting the timer costs no host synchronization: the host waits only when
// the time is read, which the trainer does at the point where it reads the step's metrics anyway.
// A step's time may leave out a stretch in the middle (pause() ... resume()): the trainer pauses
// around measurements that must happen between the backward pass and the update.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>

namespace batchlab::train {

// Wall seconds on the steady clock since `t`.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class StepTimer {
 public:
  explicit StepTimer(c10::Device device);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  // Starts a step: its time so far is 0.
  void start();
  // Leaves what follows, up to resume(), out of the step's time; waits for the device.
  void pause();
  void resume();
  // The step's time in seconds (since start(), less the paused stretches); waits for the device.
  double stop();

  bool uses_device_events() const { return events_ != nullptr; }

 private:
  struct Events;       // CUDA events; defined only in CUDA builds
  double elapsed_s();  // since start() or resume()

  std::chrono::steady_clock::time_point t0_;
  double total_s_ = 0.0;  // the step's time before the last resume()
  std::unique_ptr<Events> events_;
};

}  // namespace batchlab::train
