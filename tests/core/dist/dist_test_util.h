// Runs a few ranks of a data-parallel job as threads of the test process, each with a process
// group of its own over a real TCP store on the loopback (the same code path as separate
// processes, without the start-up cost).
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/dist/data_parallel.h"
#include "core/dist/process_group.h"

namespace batchlab::dist::testing {

inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline Rendezvous loopback(int64_t rank, int64_t world, int port) {
  Rendezvous r;
  r.rank = rank;
  r.world_size = world;
  r.local_rank = rank;
  r.local_world_size = world;
  r.master_addr = "127.0.0.1";
  r.master_port = port;
  r.source = "test threads";
  return r;
}

// Calls body(rank, data_parallel) on `world` threads; rethrows the first exception of any rank.
inline void run_ranks(
    int64_t world,
    const std::function<void(int64_t, std::shared_ptr<ProcessGroupDataParallel>)>& body,
    std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const int port = free_port();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        GroupOptions options;
        options.timeout = timeout;
        auto dp =
            std::make_shared<ProcessGroupDataParallel>(connect(loopback(r, world, port), options));
        body(r, dp);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace batchlab::dist::testing
