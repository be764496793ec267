// A Slurm submission's task list (<runs>/slurm/<stamp>.tasks, written by submit_array in
// slurm.h): one run folder a line, absolute; array task i runs the job of the i-th non-empty line
// (`batchlab sweep slurm-task TASKS INDEX`, slurm_task.h).
//
// The list sits on the shared filesystem and is read by every task, on a compute node, long after
// it was written: a line is checked before the task writes logs, records and checkpoints under the
// folder it names. Read line by line (memory bounded by kMaxTaskLine, whatever the file's size),
// a line must be an absolute path of at most kMaxTaskLine bytes, without NUL or control bytes,
// whose last part (the run id) is a plain name: letters, digits, '.', '_' or '-', not "." or "..".
// Anything else is an InputError naming the file and the line (fuzz/task_list_fuzz.cpp).
#pragma once

#include <cstddef>
#include <string>

namespace batchlab::sweeps {

inline constexpr size_t kMaxTaskLine = 4096;  // PATH_MAX

struct TaskLine {
  std::string run_dir;  // as written: an absolute path
  std::string run_id;   // its last part
};

// The run folder of array task `index` in `tasks_file`; InputError when the file cannot be read,
// holds fewer tasks, or the line is not a run folder as above.
TaskLine read_task_line(const std::string& tasks_file, size_t index);

}  // namespace batchlab::sweeps
