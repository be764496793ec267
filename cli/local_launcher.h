// `batchlab train CONFIG --nproc N [...]`: runs N ranks of a data-parallel job on this host, like a
// single-node torchrun. Each rank is this executable again (`batchlab train CONFIG [...]` without
// --nproc) with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free
// MASTER_PORT in its environment, in a process group of its own (a terminal's Ctrl-C reaches the
// launcher, which forwards it once) and killed if the launcher dies.
//
// Output: every line of every rank, prefixed "[rank R] ". Failure: when a rank exits non-zero or
// by a signal, the others notice at their next collective (at once for a dead peer, whose sockets
// close) and exit with their own error; rank 0 records the run as failed. Ranks still alive
// `grace_s` later get SIGCONT and SIGTERM, which only asks them to stop at the next step (so they
// still reach a collective and report), and SIGKILL once `kill_after_s` have passed, by when every
// collective has timed out. The launcher then prints which rank failed first and how, and exits 1
// (2 when every failed rank reported bad input).
#pragma once

#include <string>
#include <vector>

namespace batchlab::cli {

struct LaunchOptions {
  int nproc = 1;
  std::vector<std::string> rank_args;  // after the executable: "train", CONFIG, options...
  double grace_s = 2.0;
  double kill_after_s = 330.0;  // grace + train.dist_timeout + a margin
};

// Runs the ranks to completion; returns the exit code for the launcher.
int launch_local_ranks(const LaunchOptions& options);

// A TCP port that was free on 127.0.0.1 a moment ago (the kernel's pick for port 0).
int free_local_port();

}  // namespace batchlab::cli
