// A c10d process group behind a small interface of our own. LibTorch 1.13's ProcessGroupGloo is a
// ProcessGroup, 2.x's a Backend; only process_group.cpp knows which, so the rest of batchlab builds
// against either. Gloo carries CPU tensors; NCCL (compiled in only when the LibTorch build has it,
// BATCHLAB_WITH_NCCL) carries CUDA tensors.
//
// Every collective is bounded by the timeout (train.dist_timeout). A collective that fails (a peer
// exited: its sockets close; a peer hangs: the timeout expires) throws CollectiveError naming this
// rank, the operation and the timeout. After a failure the group is abandoned rather than
// destroyed: c10d's destructors wait for queued collectives that can no longer complete.
#pragma once

#include <c10/core/Device.h>
#include <torch/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "core/dist/rendezvous.h"
#include "core/errors.h"

namespace batchlab::dist {

// A collective could not complete: another rank died or stopped responding.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

enum class BackendKind { gloo, nccl };
const char* to_string(BackendKind kind);

// train.dist_backend ("auto" | "gloo" | "nccl") for a run on `device`: auto is NCCL for CUDA when
// this build has it, Gloo otherwise. NCCL for a CPU device, or in a build without it, is an
// InputError naming the key.
BackendKind choose_backend(const std::string& dist_backend, const c10::Device& device);

struct GroupOptions {
  BackendKind backend = BackendKind::gloo;
  c10::Device device{c10::DeviceType::CPU};                    // NCCL: this rank's GPU
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // every collective
  // How long rank 0's store waits for all ranks to connect: ranks load their data before they
  // connect, and loading times differ more than the gaps between training steps do.
  std::chrono::milliseconds rendezvous_timeout{std::chrono::minutes(5)};
};

// An in-flight collective.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Blocks until done (NCCL: until the current CUDA stream is ordered after it); throws
  // CollectiveError when it failed or timed out.
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  // Where the tensors of its collectives must live: the CPU for Gloo, the rank's GPU for NCCL.
  virtual c10::Device device() const = 0;
  // How this rank talks to the others, for the log ("gloo on 198.18.0.12 (the address of this host
  // that routes to rank 0's n1:20005)"): where ranks cannot reach each other, this says why.
  virtual std::string transport() const = 0;
  // Starts summing the dense contiguous tensor `t` across ranks, in place; `what` names the
  // operation in errors ("all-reduce of gradient bucket 3").
  virtual std::unique_ptr<PendingCollective> all_reduce_sum(torch::Tensor t, std::string what) = 0;
  // Starts overwriting `t` with rank 0's values.
  virtual std::unique_ptr<PendingCollective> broadcast(torch::Tensor t, std::string what) = 0;
};

// Rendezvous through a TCP store served by rank 0 at MASTER_ADDR:MASTER_PORT (every rank waits for
// all the others, at most `options.rendezvous_timeout`), then the process group.
std::unique_ptr<ProcessGroup> connect(const Rendezvous& rendezvous, const GroupOptions& options);

}  // namespace batchlab::dist
