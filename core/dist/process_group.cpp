#include "core/dist/process_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

// LibTorch guards its c10d backend headers with the macros of its own build; batchlab defines
// them here, after the precompiled header, so no other translation unit sees them.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef BATCHLAB_WITH_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "core/dist/host_address.h"
#include "core/torch_version.h"
#include "core/train/device.h"

namespace batchlab::dist {

namespace {

using Clock = std::chrono::steady_clock;

// c10::Error's what() carries a C++ backtrace; the message alone is what a user needs.
std::string describe(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

std::string timeout_text(std::chrono::milliseconds t) {
  return fmt::format("train.dist_timeout = {:g}s", static_cast<double>(t.count()) / 1000.0);
}

// What every rank's failure message has in common.
struct GroupIdentity {
  int64_t rank = 0;
  int64_t world = 1;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<std::atomic<bool>> failed = std::make_shared<std::atomic<bool>>(false);

  [[noreturn]] void fail(const std::string& what, const std::string& cause,
                         Clock::time_point since) const {
    failed->store(true);
    const double waited = std::chrono::duration<double>(Clock::now() - since).count();
    throw CollectiveError(fmt::format(
        "rank {} of {}: {} failed after {:.1f} s: {}; another rank exited or stopped responding "
        "(collectives give up after {})",
        rank, world, what, waited, cause, timeout_text(timeout)));
  }
};

class C10dPending final : public PendingCollective {
 public:
  C10dPending(c10::intrusive_ptr<c10d::Work> work, std::string what, GroupIdentity id)
      : work_(std::move(work)),
        what_(std::move(what)),
        id_(std::move(id)),
        started_(Clock::now()) {}

  void wait() override {
    try {
      work_->wait();
    } catch (const std::exception& e) {
      id_.fail(what_, describe(e), started_);
    }
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
  GroupIdentity id_;
  Clock::time_point started_;
};

// PG is c10d::ProcessGroupGloo or c10d::ProcessGroupNCCL; their collective signatures are the same
// in LibTorch 1.13 and 2.x even though their base class is not.
template <class PG>
class C10dGroup final : public ProcessGroup {
 public:
  C10dGroup(c10::intrusive_ptr<PG> pg, GroupIdentity id, c10::Device device, std::string transport)
      : pg_(std::move(pg)), id_(std::move(id)), device_(device), transport_(std::move(transport)) {}

  ~C10dGroup() override {
    // The destructor of a process group whose peer vanished waits for its queued collectives,
    // each bounded only by the timeout: leave it to the process exit instead.
    if (id_.failed->load()) (void)pg_.release();
  }

  int64_t rank() const override { return id_.rank; }
  int64_t world_size() const override { return id_.world; }
  c10::Device device() const override { return device_; }
  std::string transport() const override { return transport_; }

  std::unique_ptr<PendingCollective> all_reduce_sum(torch::Tensor t, std::string what) override {
    std::vector<at::Tensor> tensors{std::move(t)};
    return start(what, [&] { return pg_->allreduce(tensors, c10d::AllreduceOptions()); });
  }

  std::unique_ptr<PendingCollective> broadcast(torch::Tensor t, std::string what) override {
    std::vector<at::Tensor> tensors{std::move(t)};
    c10d::BroadcastOptions options;
    options.rootRank = 0;
    return start(what, [&] { return pg_->broadcast(tensors, options); });
  }

 private:
  template <class F>
  std::unique_ptr<PendingCollective> start(const std::string& what, F&& launch) {
    const auto t0 = Clock::now();
    try {
      return std::make_unique<C10dPending>(launch(), what, id_);
    } catch (const std::exception& e) {
      id_.fail(what, describe(e), t0);
    }
  }

  c10::intrusive_ptr<PG> pg_;
  GroupIdentity id_;
  c10::Device device_;
  std::string transport_;
};

// Gloo binds the address the other ranks can reach this one at (host_address.h says how it is
// chosen).
std::shared_ptr<::gloo::transport::Device> gloo_device(const GlooBinding& binding) {
  if (binding.by_interface) return c10d::ProcessGroupGloo::createDeviceForInterface(binding.value);
  return c10d::ProcessGroupGloo::createDeviceForHostname(binding.value);
}

}  // namespace

const char* to_string(BackendKind kind) { return kind == BackendKind::nccl ? "nccl" : "gloo"; }

BackendKind choose_backend(const std::string& dist_backend, const c10::Device& device) {
  if (dist_backend == "gloo") return BackendKind::gloo;
  if (dist_backend == "nccl") {
    if (!device.is_cuda()) {
      throw InputError(fmt::format(
          "train.dist_backend = nccl: NCCL carries CUDA tensors only and this run is on {}; use "
          "\"gloo\" or \"auto\"",
          device.str()));
    }
    if (!train::built_with_nccl()) {
      throw InputError(
          "train.dist_backend = nccl: this batchlab was built without NCCL (its "
          "LibTorch has none, or nccl.h was not found at configure time); use "
          "\"gloo\" or \"auto\"");
    }
    return BackendKind::nccl;
  }
  return device.is_cuda() && train::built_with_nccl() ? BackendKind::nccl : BackendKind::gloo;
}

std::unique_ptr<ProcessGroup> connect(const Rendezvous& rv, const GroupOptions& options) {
  GroupIdentity id;
  id.rank = rv.rank;
  id.world = rv.world_size;
  id.timeout = options.timeout;
  const auto t0 = Clock::now();
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(rv.master_port);
    so.isServer = rv.rank == 0;
    so.numWorkers = static_cast<size_t>(rv.world_size);
    so.waitWorkers = true;
    so.timeout = std::max(options.timeout, options.rendezvous_timeout);
    store = c10::make_intrusive<c10d::TCPStore>(rv.master_addr, so);
  } catch (const std::exception& e) {
    id.timeout = std::max(options.timeout, options.rendezvous_timeout);
    id.fail(fmt::format("rendezvous with rank 0's store at {}:{} ({})", rv.master_addr,
                        rv.master_port, rv.source),
            describe(e), t0);
  }
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("batchlab", store);
  try {
    if (options.backend == BackendKind::nccl) {
#ifdef BATCHLAB_WITH_NCCL
      // Without asynchronous error handling a NCCL collective whose peer died waits forever; with
      // it, a watchdog ends the process with the error once the timeout expires. LibTorch 2.2
      // renamed the variable (pytorch/pytorch#114077) and warns when the old name is set.
#if BATCHLAB_TORCH_AT_LEAST(2, 2)
      ::setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", 0);
#else
      ::setenv("NCCL_ASYNC_ERROR_HANDLING", "1", 0);
#endif
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = options.timeout;
      auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, static_cast<int>(rv.rank),
                                                            static_cast<int>(rv.world_size), o);
      return std::make_unique<C10dGroup<c10d::ProcessGroupNCCL>>(
          std::move(pg), id, options.device,
          "nccl (its own choice of interfaces: NCCL_SOCKET_IFNAME)");
#else
      throw InputError("NCCL requested in a build without it");
#endif
    }
    const GlooBinding binding = gloo_binding(rv, process_env, local_address_towards);
    auto o = c10d::ProcessGroupGloo::Options::create(options.timeout);
    o->devices.push_back(gloo_device(binding));
    o->threads = 2;  // two buckets in flight at once
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, static_cast<int>(rv.rank),
                                                          static_cast<int>(rv.world_size), o);
    return std::make_unique<C10dGroup<c10d::ProcessGroupGloo>>(
        std::move(pg), id, c10::Device(c10::DeviceType::CPU),
        fmt::format("gloo on {} ({})", binding.value, binding.why));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    id.fail(fmt::format("creating the {} process group", to_string(options.backend)), describe(e),
            t0);
  }
}

}  // namespace batchlab::dist
