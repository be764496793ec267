// The stop contract (contract C2), written and read here and nowhere else:
//   - the request: `batchlab train --stop-file PATH`. Another process (the study coordinator
//     racing and pruning a cell's trials) writes PATH atomically (PATH.tmp, then rename) with one
//     line `REASON STEP`: REASON one word (stop_reason below), STEP an integer >= 0. The trainer
//     reads it after every evaluation and ends the run as `stopped` at the first evaluation whose
//     step is >= STEP. A malformed file is ignored with a note: a stop request never crashes a run;
//   - the record: a run that honoured a request ends with status `stopped`, its REASON in the
//     column runs.stop_reason (schema version 4) and, for people, "REASON at step N" in
//     runs.error. Readers decide from the column, never from the text.
// Both the trainer (core/train) and the study coordinator (sweeps/) link this torch-free file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace batchlab {

// The reasons the study coordinator writes (a user may write any other word, e.g. cancelled).
namespace stop_reason {
inline constexpr std::string_view kStoppedByRace = "stopped_by_race";
inline constexpr std::string_view kPruned = "pruned";
// A fixed-budget search's rung (sweeps/study/budget_engine.h): the run keeps its weights in a
// checkpoint and is started again, from there, if its point goes on to the next rung.
inline constexpr std::string_view kRung = "rung";
}  // namespace stop_reason

struct StopRequest {
  std::string reason;
  int64_t step = 0;
  // "pruned at step 42": runs.error of the run that honoured it at step 42.
  std::string at_step(int64_t honoured_at) const;
};

// Writes `request` to `path` atomically (PATH.tmp, then rename), creating its folder. Throws Error
// naming the file when it cannot.
void write_stop_request(const std::string& path, const StopRequest& request);

// The request in `path`: nullopt when there is no such file, or when it is malformed (then
// `problem` says why, naming the file and its content).
std::optional<StopRequest> read_stop_request(const std::string& path, std::string* problem);

}  // namespace batchlab
