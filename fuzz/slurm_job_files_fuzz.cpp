// The Slurm job-id files of a study (sweeps/slurm_job_files.h): a trial's <run>/slurm_job and the
// study's slurm/coordinator.txt, written by the coordinator into the runs folder on a shared
// filesystem and read back by a later one (a resumed study, `sweep status`), which passes the ids
// to squeue and scancel. The input is the file's bytes, read both ways. Beyond ending in ids or an
// InputError, the harness checks that every id returned is a Slurm job id (digits): anything
// else would reach scancel as an argument (`--me` cancels every job of the user).
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_support.h"
#include "sweeps/slurm_job_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  const std::string path = fuzz::write_file("slurm_job", fuzz::as_text(data, size));
  fuzz::refuse_only_as_input_error([&] {
    const std::string id = sweeps::read_slurm_job_file(path);
    if (!id.empty() && !sweeps::is_slurm_job_id(id)) std::abort();
  });
  fuzz::refuse_only_as_input_error([&] {
    for (const std::string& id : sweeps::read_job_id_lines(path)) {
      if (!sweeps::is_slurm_job_id(id)) std::abort();
    }
  });
  return 0;
}
