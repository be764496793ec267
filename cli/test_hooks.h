// Fault injection for tests of crash handling, retries, resume and rank failures: the environment
// variable
//   BATCHLAB_TEST_FAULT=ACTION@STEP[:RUN_ID_PREFIX][,rank=R]
// makes `batchlab train` hurt itself right after the steps row of 0-based update STEP is reported,
// when its run id starts with RUN_ID_PREFIX (any run when absent) and, in a data-parallel run, on
// rank R only (rank 0 when absent). ACTION is
//   kill   SIGKILL: the process vanishes between checkpoints, as after an OOM kill or a node loss;
//   crash  abort(): a crash (SIGABRT, core dump), which the sweep engine retries;
//   term   SIGTERM: the polite preemption of a cluster scheduler;
//   hang   SIGSTOP: the process stops answering without exiting (a wedged rank: the others must
//          give up after train.dist_timeout);
//   pipe   SIGPIPE: what a write to a socket or pipe a dead peer closed delivers (a rank ignores it
//          and takes the write's error instead);
//   hold   waits, while the file `hold` exists in the folder BATCHLAB_TEST_HOLD_DIR, with
//          `<run id>.held` written there, until the file is removed or a stop signal arrives
//          (SIGTERM, SIGINT, SIGUSR1, SIGUSR2: then passed on, so the run ends as preempted at the
//          next step boundary, with its checkpoint). A test that scancels, requeues or kills a
//          running trial holds it first, so the trial cannot reach its end before the test acts
//          (issue 45); it picks a STEP after which no evaluation is due, or the target could be
//          reached at that evaluation before the stop is seen.
// Unset (always, outside tests) it costs nothing: no reporter is added.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/train/reporter.h"

namespace batchlab::cli {

// The reporter that injects the fault, or null when BATCHLAB_TEST_FAULT is unset or does not
// apply to `run_id` and `rank`. A malformed value is a UsageError naming the variable.
std::shared_ptr<train::Reporter> make_fault_injector(const std::string& run_id, int64_t rank = 0);

}  // namespace batchlab::cli
