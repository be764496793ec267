// Stop requests (contract C2): `batchlab train --stop-file PATH`. Another process (the sweep
// engine racing a study's trials) writes PATH atomically (PATH.tmp, then rename) with one line
// `REASON STEP`: REASON one word (stopped_by_race, pruned, cancelled), STEP an integer >= 0. The
// trainer reads it after every evaluation and ends the run as `stopped` at the first evaluation
// whose step is >= STEP. A malformed file is ignored with a note: a stop request never crashes a
// run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace batchlab::train {

struct StopRequest {
  std::string reason;
  int64_t step = 0;
};

// The request in `path`: nullopt when there is no such file, or when it is malformed (then
// `problem` says why, naming the file and its content).
std::optional<StopRequest> read_stop_request(const std::string& path, std::string* problem);

}  // namespace batchlab::train
