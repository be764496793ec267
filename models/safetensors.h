// The safetensors format (Hugging Face's `safetensors` package; what save_pretrained, timm and
// torchvision's hub share weights in): an 8-byte little-endian header length N, N bytes of JSON
//   {"NAME": {"dtype": "F32", "shape": [a, b], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"format": "pt", ...}}
// (optionally padded with spaces), then the tensors' raw little-endian bytes, each at
// [begin, end) of the buffer after the header. Nothing else: no pickle, no code.
//
// Debian packages no C or C++ reader, so this is batchlab's own, checked against files the Python
// package writes (tests/cli/hf_interchange.py) and against hand-broken ones. The reader follows
// the package's own rules: offsets within the buffer, each tensor's bytes exactly its shape's,
// tensors neither overlapping nor leaving holes, and a known dtype.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/state_dict.h"

namespace batchlab::models {

// Whether `path` names a safetensors file by its extension (".safetensors").
bool is_safetensors_path(const std::string& path);

struct SafetensorsFile {
  StateDict tensors;                            // in header order
  std::map<std::string, std::string> metadata;  // "__metadata__" (string -> string)
};

// Reads and checks a whole safetensors file. Floating-point tensors (F32, F16, BF16, F64) and
// integer and boolean ones (I64 ... U8, BOOL: buffers such as BatchNorm's num_batches_tracked)
// keep their dtype. Throws InputError naming `path` and what is wrong, before any tensor is made:
// a file shorter than its header length says, a header that is no JSON object, an entry without
// dtype / shape / data_offsets, an unknown or unsupported dtype, offsets out of the buffer's
// range, bytes that do not fit the shape, overlapping tensors, and bytes no tensor covers.
SafetensorsFile read_safetensors(const std::string& path);

// The bytes of a safetensors file holding `entries` (contiguous copies on the CPU, in the given
// order) and `metadata`. Hugging Face's loaders want {"format": "pt"} in the metadata; callers
// pass it. Throws Error for a dtype the format cannot name.
std::vector<char> safetensors_bytes(const StateDict& entries,
                                    const std::map<std::string, std::string>& metadata);

// A state_dict file of either format by its extension: read_safetensors(path).tensors for
// ".safetensors", read_state_dict(path) (torch.save) for anything else.
StateDict read_weights_file(const std::string& path);

}  // namespace batchlab::models
