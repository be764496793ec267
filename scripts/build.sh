#!/usr/bin/env bash
# Configures and builds batchlab into build/ (Release, warnings as errors). Usage: scripts/build.sh [targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache's settings (sloppiness, PCH checksum, base dir) go with the compiler launcher that
# CMakeLists.txt sets, so `cmake --build build` alone hits the cache the same way.
jobs=${BATCHLAB_JOBS:-$(nproc)}
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBATCHLAB_SERVE=ON
fi
if [[ $# -gt 0 ]]; then
  cmake --build build -j "$jobs" --target "$@"
else
  cmake --build build -j "$jobs"
fi
