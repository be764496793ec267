// A Slurm submission's task list (sweeps/task_list.h), read by every array task of
// `batchlab sweep slurm-task TASKS INDEX` on a compute node: one absolute run folder a line. The
// input is a byte (the task index, 0-15) and the file's bytes. Beyond ending in a run folder or an
// InputError, the harness checks what the task would go on to write under: an absolute path of at
// most kMaxTaskLine bytes whose last part is the run id, a plain name (never "", "." or "..").
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz/fuzz_support.h"
#include "sweeps/task_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  if (size == 0) return 0;
  const size_t index = data[0] % 16;
  const std::string path = fuzz::write_file("tasks", fuzz::as_text(data + 1, size - 1));
  fuzz::refuse_only_as_input_error([&] {
    const sweeps::TaskLine task = sweeps::read_task_line(path, index);
    const bool ok = !task.run_dir.empty() && task.run_dir.front() == '/' &&
                    task.run_dir.size() <= sweeps::kMaxTaskLine && !task.run_id.empty() &&
                    task.run_id != "." && task.run_id != ".." &&
                    std::filesystem::path(task.run_dir).filename().string() == task.run_id &&
                    task.run_id.find('/') == std::string::npos;
    if (!ok) std::abort();
  });
  return 0;
}
