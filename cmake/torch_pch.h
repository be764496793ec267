// Precompiled for every target that uses LibTorch (see cmake/batchlab.cmake).
#pragma once
#include <torch/torch.h>
