// Asking the cluster before submitting: `sbatch --test-only` on a script with the submission's
// resource options tells whether Slurm would accept the job (a partition that does not exist, a
// time above the partition's limit, GPUs on a cluster without them, an unknown account) without
// queueing anything. `sweep submit --slurm` checks every script it is about to submit this way
// before it writes to the sweep database or submits, so a refused option is bad input (exit 2)
// with nothing submitted and nothing recorded.
//
// sbatch's own message does not always say which option it refused; when the whole set is refused,
// each option is asked about alone, and the ones refused alone are named (or, when none is, the
// whole set).
#pragma once

#include <string>
#include <vector>

#include "sweeps/slurm.h"

namespace batchlab::sweeps {

// Throws InputError naming the refused options (as the user gave them: "--partition nope") and
// sbatch's message when the cluster would refuse a job with `options`' resources; Error when sbatch
// cannot be run at all. `what` names the job in the message ("the study's trial jobs").
void check_slurm_resources(const SlurmOptions& options, const std::string& what);

// The sbatch arguments the cluster refuses, each tried alone (exposed for tests with a fake
// sbatch). Empty when they are accepted together.
std::vector<SbatchOption> refused_options(const std::vector<SbatchOption>& options,
                                          std::string* message);

}  // namespace batchlab::sweeps
