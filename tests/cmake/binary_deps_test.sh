#!/usr/bin/env bash
# The batchlab binary of a CUDA build must start on a machine with no GPU and no driver, and load
# the CUDA runtime and NCCL that came with the torch wheel, not a system toolkit's (whose NCCL
# may be older than the one LibTorch was built with):
#   1. neither batchlab nor any library it loads has NEEDED libcuda.so.1 (the driver; CUDA
#      reaches it with dlopen when a GPU is used, so its absence must not stop the program);
#   2. what the loader resolves for libtorch_cuda.so, libcudart.so.13 and libnccl.so.2 lies under
#      the wheel's site-packages (SITE), never under /usr/local/cuda*;
#   3. `batchlab version` says CUDA and NCCL are compiled in and sees 0 devices.
# Usage: binary_deps_test.sh BATCHLAB SITE_PACKAGES WITH_CUDA(ON|OFF) WITH_NCCL(ON|OFF)
set -euo pipefail
bin=$1
site=$(cd "$2" && pwd -P)
with_cuda=$3
with_nccl=$4
failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}

if [[ $with_cuda != ON ]]; then
  echo "SKIP: this build has no CUDA (configure printed CUDA OFF)"
  exit 77
fi

# 1. No NEEDED libcuda.so.1 anywhere in what the loader maps for batchlab.
ldd_out=$(ldd "$bin")
mapfile -t libs < <(awk '/=> \// {print $3}' <<<"$ldd_out")
for f in "$bin" "${libs[@]}"; do
  if readelf -d "$f" | grep -q 'NEEDED.*\[libcuda\.so'; then
    fail "$f has NEEDED libcuda.so (the driver): the binary would not start without one"
  fi
done
echo "checked NEEDED of $bin and ${#libs[@]} libraries: no libcuda.so.1"

# 2. The wheel's CUDA runtime and NCCL are the ones loaded.
resolved() { awk -v lib="$1" '$1 == lib {print $3}' <<<"$ldd_out"; }
expect=(libtorch_cuda.so libcudart.so.13)
if [[ $with_nccl == ON ]]; then expect+=(libnccl.so.2); fi
for lib in "${expect[@]}"; do
  path=$(resolved "$lib")
  if [[ -z $path ]]; then
    fail "$lib is not loaded by $bin"
    continue
  fi
  real=$(readlink -f "$path")
  case $real in
    "$site"/*) echo "$lib => $real" ;;
    *) fail "$lib resolves to $real, not under the wheel's $site" ;;
  esac
done
if grep -E '=> /usr/local/cuda' <<<"$ldd_out"; then
  fail "libraries above come from the system CUDA toolkit, not the wheel"
fi
if grep -q 'not found' <<<"$ldd_out"; then
  grep 'not found' <<<"$ldd_out"
  fail "libraries not found"
fi

# 3. What batchlab itself reports.
version=$("$bin" version)
echo "$version"
nccl_word=no
if [[ $with_nccl == ON ]]; then nccl_word=yes; fi
want="CUDA yes, NCCL $nccl_word, 0 device(s) visible"
grep -qF "$want" <<<"$version" || fail "batchlab version does not say '$want'"

exit $failed
