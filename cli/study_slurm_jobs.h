// `sweep status` on a study submitted with `sweep submit --slurm`: its coordinator job and every
// trial job queued or running, with the run each one runs.
#pragma once

#include "cli/sweep_context.h"

namespace batchlab::cli {

// Prints the study's Slurm jobs (nothing when it was never submitted to Slurm).
void print_study_slurm_jobs(const SweepContext& ctx);

}  // namespace batchlab::cli
