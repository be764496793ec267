#!/usr/bin/env bash
# The GPU job of docs/gpu.md in one script, since every call to a lent machine pays its start:
# unpack the carried dependencies, configure against the machine's LibTorch (CUDA and NCCL),
# build batchlab and the GPU-relevant test suites, run them, and take the `batchlab bench`
# figures. Everything lands under $OUT (default /tmp/batchlab-gpu): configure/build logs, one log
# per suite, suites.txt (exit codes), version.txt, bench_*.json.
# Usage (repository root, on the GPU machine): bash scripts/gpu/job.sh [DEBS_DIR]
#   BATCHLAB_WERROR=ON to build with warnings as errors (the default here is OFF: the machine's
#   compiler may warn about things Debian's GCC 12 does not; fix those, then turn it on).
# Not yet run: no GPU has been lent to a session since it was written (docs/gpu.md).
set -uo pipefail
debs=${1:-.gpu-debs}
out=${OUT:-/tmp/batchlab-gpu}
mkdir -p "$out"
# shellcheck source=scripts/gpu/unpack.sh
source scripts/gpu/unpack.sh "$debs" >"$out/unpack.log" 2>&1 || { cat "$out/unpack.log"; exit 1; }
tail -1 "$out/unpack.log"

if ! cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBATCHLAB_WERROR="${BATCHLAB_WERROR:-OFF}" -DBATCHLAB_BUILD_BENCH=OFF >"$out/configure.log" 2>&1
then
  tail -40 "$out/configure.log"
  exit 1
fi
grep "batchlab: LibTorch" "$out/configure.log"

suites=(core_optim_tests core_train_tests core_dist_tests models_tests)
if ! cmake --build build-gpu -j"$(nproc)" --target batchlab "${suites[@]}" >"$out/build.log" 2>&1
then
  grep -m 30 -A 6 "error" "$out/build.log"
  exit 1
fi
build-gpu/batchlab version | tee "$out/version.txt"

for suite in "${suites[@]}"; do
  build-gpu/tests/"$suite" --gtest_brief=1 >"$out/$suite.log" 2>&1
  echo "$suite exit $?" | tee -a "$out/suites.txt"
done

# bench NAME ARGS...: one `batchlab bench` run on this rank's GPU, as JSON.
bench() {
  local name=$1
  shift
  build-gpu/batchlab bench --device cuda --format json "$@" >"$out/bench_$name.json" \
    2>"$out/bench_$name.err"
  echo "bench $name exit $?" | tee -a "$out/suites.txt"
}
bench resnet50_bf16_cl_b256 --model resnet50 --precision bf16 --channels-last --batch 256 \
  --optimizer lars --steps 30 --warmup 10
bench resnet50_fp32_b256 --model resnet50 --batch 256 --optimizer lars --steps 20 --warmup 5
bench bert_large_bf16_s128_b64 --model bert_large --precision bf16 --seq-len 128 --batch 64 \
  --optimizer lamb --steps 20 --warmup 5
