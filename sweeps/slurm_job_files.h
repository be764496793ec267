// The files a study on Slurm keeps its Slurm job ids in, read back by a later coordinator:
//   <runs>/<run_id>/slurm_job        the job of a trial's latest submission (one id)
//   <runs>/slurm/coordinator.txt     the coordinator jobs submitted for the study (one id a line)
// They sit in the runs folder on a shared filesystem, where a user, a script or a damaged copy can
// put anything, and what they hold goes on to squeue and scancel as arguments: an "id" such as
// `--me` would have scancel cancel every job of the user. So a reader takes Slurm job ids only
// (what sbatch --parsable prints: 1 to 20 digits), reads at most kMaxJobIdFileBytes, and refuses
// anything else as an InputError naming the file and the line (fuzz/slurm_job_files_fuzz.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab::sweeps {

// coordinator.txt gains a line per coordinator submission; a megabyte is 50,000 of them.
inline constexpr size_t kMaxJobIdFileBytes = size_t{1} << 20;

// Whether `text` is a job id as sbatch --parsable prints it (1 to 20 digits).
bool is_slurm_job_id(std::string_view text);

// A trial's slurm_job file: its one id, "" when the file is missing or blank.
std::string read_slurm_job_file(const std::string& path);

// coordinator.txt: its ids in file order (blank lines skipped), none when the file is missing.
std::vector<std::string> read_job_id_lines(const std::string& path);

}  // namespace batchlab::sweeps
