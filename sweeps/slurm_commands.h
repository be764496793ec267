// Slurm's client commands (sbatch, squeue, scancel, sinfo) as batchlab calls them, and what their
// answers mean. Every call goes through here, for three reasons a real site forces:
//   - a site may print banners on standard error (`sbatch: INFO: account demo`), so a command's
//     answer is read from its standard output alone and checked (a job id is `digits[;cluster]`);
//   - the controller may be briefly unreachable (a failover, a busy slurmctld): such a failure is
//     retried with backoff, while a refusal for good (a submit limit, an unknown partition) is not;
//   - sites rate-limit the scheduler's commands: every call is counted (slurm_call_counts), so a
//     test can state how many calls a study makes per trial and per minute.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"

namespace batchlab::sweeps {

// A command's exit code (-1 when it could not be started or was killed) and its two streams apart.
struct SlurmAnswer {
  int code = -1;
  std::string out;
  std::string err;
  // Both streams, trimmed: what a person is shown.
  std::string message() const;
};

// Runs `argv` (argv[0] looked up on PATH, no shell) and waits for it; counted by argv[0].
SlurmAnswer run_slurm_command(const std::vector<std::string>& argv);

// How often each Slurm command was run by this process, by name ("sbatch", "squeue", ...).
std::map<std::string, int64_t> slurm_call_counts();

// The job id in `sbatch --parsable`'s standard output: its last non-empty line, `digits` or
// `digits;cluster`, returned as the digits. nullopt for anything else.
std::optional<std::string> parse_parsable_job_id(std::string_view out);

// Why sbatch did not submit.
enum class SbatchFailure {
  transient,  // the controller did not answer (time-out, connection refused): worth retrying
  limit,      // a submit limit (MaxSubmitJobs and its kin): the queue must drain first
  refused,    // the job itself is refused (partition, account, resources): bad input
  missing,    // sbatch cannot be run here, or has no configuration: not a Slurm submit host
  garbled,    // sbatch exited 0 but printed no job id on standard output
};
SbatchFailure classify_sbatch_failure(const SlurmAnswer& answer);
std::string_view describe(SbatchFailure failure);

// sbatch did not submit, after its retries; what() quotes sbatch's own message.
class SbatchError : public Error {
 public:
  SbatchError(SbatchFailure failure, const std::string& message)
      : Error(message), failure_(failure) {}
  SbatchFailure failure() const { return failure_; }

 private:
  SbatchFailure failure_;
};

// How a transient failure is retried: `tries` in all, waiting `first_delay`, then twice as long
// each time, at most `max_delay`.
struct RetryPolicy {
  int tries = 5;
  std::chrono::milliseconds first_delay{1000};
  std::chrono::milliseconds max_delay{16000};
};
// Tests shorten the waits with BATCHLAB_SLURM_RETRY_MS (the first delay, in milliseconds).
RetryPolicy default_retry_policy();

// `sbatch --parsable SCRIPT`: the job id. Transient failures are retried per `policy`; throws
// SbatchError for any other failure, or when the retries are spent.
//
// A transient failure is ambiguous: with "Socket timed out on send/recv operation" or "zero bytes
// were transmitted" an overloaded controller has often queued the job already, and a blind retry
// would run it twice (one trial as two jobs in one run folder; a sweep's whole array twice). So the
// script carries a comment of its own (`#SBATCH --comment=batchlab-submit:...`, written into
// SCRIPT after its first line), and before each retry squeue is asked for the user's job with that
// comment: found, it is adopted (its id returned) instead of submitting again; while squeue does
// not answer either, nothing is submitted, and when the tries are spent SbatchError says to check
// the queue.
std::string sbatch_submit(const std::string& script, const RetryPolicy& policy);

// The name of the user this process runs as (the owner of the jobs it submits); nullopt where
// the user database has no entry for it (a container with an arbitrary uid) and $USER is unset.
std::optional<std::string> current_user_name();

}  // namespace batchlab::sweeps
