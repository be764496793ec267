// Fault injection for tests of crash handling, retries and resume: the environment variable
//   BATCHLAB_TEST_FAULT=ACTION@STEP[:RUN_ID_PREFIX]
// makes `batchlab train` hurt itself right after the steps row of 0-based update STEP is reported,
// when its run id starts with RUN_ID_PREFIX (any run when absent). ACTION is
//   kill   SIGKILL: the process vanishes between checkpoints, as after an OOM kill or a node loss;
//   crash  abort(): a crash (SIGABRT, core dump), which the sweep engine retries;
//   term   SIGTERM: the polite preemption of a cluster scheduler.
// Unset (always, outside tests) it costs nothing: no reporter is added.
#pragma once

#include <memory>
#include <string>

#include "core/train/reporter.h"

namespace batchlab::cli {

// The reporter that injects the fault, or null when BATCHLAB_TEST_FAULT is unset or does not
// apply to `run_id`. A malformed value is a UsageError naming the variable.
std::shared_ptr<train::Reporter> make_fault_injector(const std::string& run_id);

}  // namespace batchlab::cli
