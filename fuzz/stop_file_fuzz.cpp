// A trial's stop file (core/stop_request.h, contract C2): the study coordinator writes
// `REASON STEP` to `<run folder>/stop` on the shared filesystem and the trainer reads it after
// every evaluation (`batchlab train --stop-file`). The contract is stricter than the other
// parsers': a malformed file is ignored with a note, never an exception of any kind (an InputError
// here would end a running trial with exit 2), so the harness lets nothing be caught and checks
// the two outcomes: a request whose reason is one word and whose step is >= 0, or no request and
// a note naming the file.
#include <cctype>
#include <cstdlib>
#include <string>

#include "core/stop_request.h"
#include "fuzz/fuzz_support.h"

namespace {

bool one_word(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  const std::string path = fuzz::write_file("stop", fuzz::as_text(data, size));
  std::string problem;
  const auto request = read_stop_request(path, &problem);
  if (request) {
    if (!one_word(request->reason) || request->step < 0 || !problem.empty()) std::abort();
  } else if (problem.find(path) == std::string::npos) {
    std::abort();  // a file that is there but refused must be named in the note
  }
  return 0;
}
