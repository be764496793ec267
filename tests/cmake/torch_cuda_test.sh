#!/usr/bin/env bash
# What cmake/torch_cuda.cmake decides for the LibTorch layouts a GPU machine may have, checked on
# any machine: a probe project (torch_cuda_probe/) includes the file with a LibTorch described by
# -D options and a fake pip site-packages (torch/ and, where the case needs it, nvidia/.../nccl.h).
# The machine's own nccl.h (a CUDA toolkit in /usr/local/cuda, /usr/local/include, libnccl-dev) is
# hidden from the probes with CMAKE_IGNORE_PATH, so only the fake layouts decide.
# Usage: torch_cuda_test.sh [CMAKE]
set -euo pipefail
cmake_bin=${1:-cmake}
root=$(cd "$(dirname "$0")/../.." && pwd)
ignore="/usr/include;/usr/local/include"
for d in /usr/local/cuda/include "$(readlink -f /usr/local/cuda 2>/dev/null)/include"; do
  ignore+=";$d"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A pip torch's site-packages: torch/__init__.py and torch/share/cmake/Torch (Torch_DIR).
make_site() {
  mkdir -p "$1/torch/share/cmake/Torch"
  touch "$1/torch/__init__.py"
}
# probe NAME SITE [-D...]: configures into $tmp/NAME, log in $tmp/NAME.log; returns cmake's status.
probe() {
  local name=$1 site=$2
  shift 2
  env -u NCCL_ROOT -u NCCL_HOME "$cmake_bin" -S "$root/tests/cmake/torch_cuda_probe" \
    -B "$tmp/$name" -DBATCHLAB_ROOT="$root" -DTorch_VERSION=2.9.1 \
    -DTorch_DIR="$site/torch/share/cmake/Torch" -DCMAKE_IGNORE_PATH="$ignore" "$@" \
    >"$tmp/$name.log" 2>&1
}
# configures NAME SITE [-D...]: probe, which must succeed.
configures() {
  if ! probe "$@"; then
    echo "FAIL ($1): the configure failed"
    cat "$tmp/$1.log"
    exit 1
  fi
}
expect_in_log() {
  if ! grep -qF "$2" "$tmp/$1.log"; then
    echo "FAIL ($1): expected the configure log to contain: $2"
    cat "$tmp/$1.log"
    exit 1
  fi
}

make_site "$tmp/bare"
configures cpu "$tmp/bare"
expect_in_log cpu "batchlab: LibTorch 2.9.1, CUDA OFF, NCCL OFF"

if probe no_nccl "$tmp/bare" -DCAFFE2_USE_CUDA=ON; then
  echo "FAIL (no_nccl): a CUDA LibTorch without nccl.h configured"
  cat "$tmp/no_nccl.log"
  exit 1
fi
expect_in_log no_nccl "has CUDA but nccl.h was not found"
expect_in_log no_nccl "BATCHLAB_ALLOW_NO_NCCL"

configures allowed "$tmp/bare" -DCAFFE2_USE_CUDA=ON -DBATCHLAB_ALLOW_NO_NCCL=ON
expect_in_log allowed "batchlab: LibTorch 2.9.1, CUDA ON, NCCL OFF"

configures opted_out "$tmp/bare" -DCAFFE2_USE_CUDA=ON -DBATCHLAB_NCCL=OFF
expect_in_log opted_out "batchlab: LibTorch 2.9.1, CUDA ON, NCCL OFF"

# nvidia-nccl-cu12's layout, and the CUDA 13 wheels' shared nvidia/cu13 prefix.
for layout in nccl cu13; do
  make_site "$tmp/$layout"
  mkdir -p "$tmp/$layout/nvidia/$layout/include"
  touch "$tmp/$layout/nvidia/$layout/include/nccl.h"
  configures "wheel_$layout" "$tmp/$layout" -DCAFFE2_USE_CUDA=ON
  expect_in_log "wheel_$layout" "batchlab: LibTorch 2.9.1, CUDA ON, NCCL ON"
done

mkdir -p "$tmp/nccl_root/include"
touch "$tmp/nccl_root/include/nccl.h"
configures nccl_root "$tmp/bare" -DCAFFE2_USE_CUDA=ON -DNCCL_ROOT="$tmp/nccl_root"
expect_in_log nccl_root "batchlab: LibTorch 2.9.1, CUDA ON, NCCL ON"
echo "torch_cuda.cmake: 7 layouts decided as expected"
