#!/usr/bin/env bash
# Configures and builds batchlab into build/ (Release, warnings as errors). Usage: scripts/build.sh [targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
# Files that use the precompiled LibTorch header hash its checksum file, not the .gch, which holds
# absolute paths (cmake/batchlab.cmake, _batchlab_write_pch_checksum): a clone elsewhere hits too.
export CCACHE_PCH_EXTSUM=true
# Paths hashed relative to the checkout: build directories side by side (build-*/) share cache hits.
export CCACHE_BASEDIR="$PWD"
jobs=${BATCHLAB_JOBS:-$(nproc)}
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBATCHLAB_SERVE=ON
fi
if [[ $# -gt 0 ]]; then
  cmake --build build -j "$jobs" --target "$@"
else
  cmake --build build -j "$jobs"
fi
