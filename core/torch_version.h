// One spelling of "this LibTorch is at least version X.Y" for the code that differs between
// Debian's LibTorch 1.13 and LibTorch 2.x (docs/gpu.md lists every such place). torch/version.h
// defines TORCH_VERSION_MAJOR / TORCH_VERSION_MINOR in both
// (torch/csrc/api/include/torch/version.h.in). Only targets that link LibTorch include this header.
#pragma once

#include <torch/version.h>

#define BATCHLAB_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
