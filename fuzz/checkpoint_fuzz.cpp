// batchlab's own checkpoints (core/train/checkpoint.h), read back the four ways a run reads them:
// the newest ckpt-*.pt on resume (CheckpointStore::load_latest), best.pt (read_best), a
// data-parallel rank's RNG file (load_rank_state) and the weights alone (load_model_weights:
// `export --checkpoint`, a study's rung restart). A checkpoint sits in a run folder, often on a
// shared filesystem, and is read by a later process: its contents are input.
//
// A checkpoint is a header, the payload's SHA-256 and the payload, a LibTorch archive (a zip of
// records: data.pkl, the TorchScript code of the module types, tensor data). The input is the
// archive's records, each NAME_LENGTH (1 byte), NAME, DATA_LENGTH (4 bytes, little-endian),
// DATA; the harness zips them as LibTorch does and frames the zip with the right checksum, so the
// fuzzer explores what batchlab and LibTorch read from the records instead of the zip's CRC-32s
// and the SHA-256 (the checks themselves are unit-tested: tests/core/train/checkpoint_test.cpp).
// The seeds are the records of files CheckpointStore wrote for the model and optimizer below,
// with the run id kRunId. The expected refusal is CheckpointError (an InputError: exit 2).
#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/sha256.h"
#include "core/train/checkpoint.h"
#include "fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;
constexpr const char* kRunId = "0123456789abcdef";

// A name the zip writer takes: printable ASCII, no empty path part, not a folder. miniz refuses
// others and its error sticks to the writer (every later call, and its destructor, throws), so
// they are left out; the zip's names are LibTorch's to check, not batchlab's.
bool writable_name(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.back() == '/') return false;
  if (name.find("//") != std::string::npos) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// The records of the input as a LibTorch archive. Records LibTorch writes itself at the end
// (version, byteorder, the serialization id), repeated names and names the writer refuses are
// left out: they are not what is being fuzzed.
std::string archive_of(std::string_view input) {
  std::string archive;
  caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* p, size_t n) -> size_t {
    archive.append(static_cast<const char*>(p), n);
    return n;
  });
  std::vector<std::string> written;
  while (!input.empty()) {
    const size_t name_length = static_cast<uint8_t>(input.front());
    input.remove_prefix(1);
    if (input.size() < name_length + 4) break;
    const std::string name(input.substr(0, name_length));
    input.remove_prefix(name_length);
    uint32_t length = 0;
    std::memcpy(&length, input.data(), 4);
    input.remove_prefix(4);
    const std::string_view record = input.substr(0, length);
    input.remove_prefix(record.size());
    const bool reserved = !writable_name(name) || name == "version" || name == "byteorder" ||
                          name == ".data/version" || name == ".data/serialization_id";
    if (reserved || std::find(written.begin(), written.end(), name) != written.end()) continue;
    writer.writeRecord(name, record.data(), record.size());
    written.push_back(name);
  }
  writer.writeEndOfFile();
  return archive;
}

// Header, checksum, payload: the layout core/train/checkpoint.h describes.
std::string framed(const std::string& payload) {
  batchlab::config::Sha256 sha;
  sha.update(payload);
  const auto digest = sha.digest();
  const uint64_t length = payload.size();
  std::string bytes = "BLCKPT01";
  bytes.append(reinterpret_cast<const char*>(&length), sizeof length);
  bytes.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  return bytes + payload;
}

struct Run {
  torch::nn::Sequential model{torch::nn::Linear(3, 2), torch::nn::BatchNorm1d(2)};
  torch::optim::Adam optimizer{model->parameters(), torch::optim::AdamOptions(1e-3)};
  Run() { torch::set_num_threads(1); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  static Run run;
  const fs::path dir = fuzz::scratch_dir() / "checkpoints";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  const std::string bytes = framed(archive_of(fuzz::as_text(data, size)));
  for (const char* name : {"ckpt-000000000007.pt", "best.pt", "rank1-000000000007.pt"}) {
    fuzz::write_file("checkpoints/" + std::string(name), bytes);
  }

  train::CheckpointStore store(dir.string());
  std::vector<std::string> warnings;
  fuzz::refuse_only_as_input_error(
      [&] { store.load_latest(kRunId, *run.model, run.optimizer, warnings); });
  fuzz::refuse_only_as_input_error([&] { store.read_best(kRunId); });
  fuzz::refuse_only_as_input_error([&] { store.load_rank_state(kRunId, 7, 1, warnings); });
  fuzz::refuse_only_as_input_error([&] {
    train::load_model_weights((dir / "ckpt-000000000007.pt").string(), kRunId, *run.model);
  });
  return 0;
}
