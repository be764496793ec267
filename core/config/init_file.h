// model.init_from, the file a run starts from, as part of the run's identity. The loader checks the
// file (it must exist and be readable) and records its SHA-256 in model.init_sha256, which the
// canonical TOML includes: the same path holding other weights is another run id, and a sweep's job
// file (canonical TOML with the hash) refuses to run when the file changed after planning.
//
// init_from names a torch.save file, a .safetensors file, or a Hugging Face save_pretrained folder
// (config.json and model.safetensors, or pytorch_model.bin from older transformers); a folder's
// hash covers the two files batchlab reads from it (hf_folder_files), not its tokenizer files.
//
// Reading the file's contents as a state_dict is the model layer's job (experiments/tasks/
// initial_weights.h); here only its bytes matter.
#pragma once

#include <string>
#include <vector>

#include "core/config/model_config.h"
#include "core/errors.h"

namespace batchlab::config {

// The files of a save_pretrained folder that batchlab reads.
struct HfFolderFiles {
  std::string config;   // DIR/config.json
  std::string weights;  // DIR/model.safetensors, else DIR/pytorch_model.bin; "" when neither
};
HfFolderFiles hf_folder_files(const std::string& dir);

// Lower-case hex SHA-256 of the file's bytes. Remembered per (path, size, modification time) once
// the file is a few seconds old, so a sweep of many jobs starting from one multi-gigabyte file
// hashes it once per process. Throws InputError naming the path when it cannot be read.
std::string file_sha256(const std::string& path);

// With `read_file`: checks model.init_from and fills model.init_sha256 from the file, or compares
// it with the hash already there (a job file written at planning time). Without it (exporting a
// recorded run, whose starting file may be gone): only the rules that need no file. Appends
// diagnostics keyed "model.init_from" / "model.init_sha256" that name the path and the fix.
void resolve_init_file(ModelConfig& model, bool read_file, std::vector<Diagnostic>& out);

}  // namespace batchlab::config
