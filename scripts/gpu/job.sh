#!/usr/bin/env bash
# The whole GPU hour's first ten minutes in one script (every call to a lent machine pays its
# start): build against the machine's PyTorch, run the GPU-relevant tests, take the throughput
# figures, and write ONE results file, $OUT/results.json (plus one log per step beside it).
#
#   bash scripts/gpu/job.sh [DEBS_DIR]    on the GPU machine, repository root (docs/gpu.md)
#   bash scripts/gpu/job.sh --rehearse    here, on the CPU: every step with tiny sizes against the
#                                         already built build/ (BATCHLAB_BUILD_DIR), so the script
#                                         itself is tested (ctest -R gpu_job_rehearsal)
#
# Steps and the time each took on one H200 with 16 cores (2026-11-28, docs/gpu.md; the build's
# figure is the first, failed build's pace):
#   1 unpack     the carried .deb files (scripts/gpu/unpack.sh)                            8-11 s
#   2 configure  against the machine's LibTorch, CUDA and NCCL, Release, sm_90              10 s
#   3 build      batchlab, core_optim_tests, core_train_tests, optim_device_bench, -j16  ~2-3 min
#   4 tests      core_optim_tests (all: golden trajectories, foreach vs fused) and the GPU
#                tests of core_train_tests (CUDA events, cuDNN benchmark mode, host reads)     4 s
#   5 bench      ResNet-50 bf16 channels-last batch 256 (images/s, MFU)                      17 s
#   6 bench      BERT-large, sequence 128, bf16, LAMB, batch 64 (tokens/s, MFU)                8 s
#   7 train      ResNet-50 on synthetic 3x224x224 / 1000 classes, batch 256, LARS, bf16, the same
#                steps through `batchlab train`: images/s against step 5 (trainer overhead)   23 s
#   8 optimizers LARS and LAMB (multi-tensor path) against torch's fused SGD and AdamW on
#                ResNet-50's and BERT-large's parameters (bench/optim_device_bench)          136 s
#   9 results    $OUT/results.json: every figure above, each step's exit status and seconds
# Total about 6 minutes; a step that fails is recorded and the next one still runs.
#   BATCHLAB_WERROR=ON builds with warnings as errors (default OFF here: the machine's compiler may
#   warn about things Debian's GCC does not; fix those, then turn it on).
set -uo pipefail
# The step functions below run through `step NAME FUNCTION`, which shellcheck cannot follow.
# shellcheck disable=SC2317

rehearse=0
debs=.gpu-debs
for arg in "$@"; do
  case $arg in
    --rehearse) rehearse=1 ;;
    -h | --help)
      sed -n '2,27p' "$0"
      exit 0
      ;;
    *) debs=$arg ;;
  esac
done

out=${OUT:-/tmp/batchlab-gpu}
mkdir -p "$out"
steps_file="$out/steps.tsv"
: >"$steps_file"

if ((rehearse)); then
  build=${BATCHLAB_BUILD_DIR:-build}
  device=cpu
  # Tiny sizes: the same commands, seconds each on one core.
  r50=(--model resnet50 --image-size 32 --batch 2 --steps 1 --warmup 0)
  bert=(--model bert_tiny --seq-len 16 --batch 2 --steps 1 --warmup 0)
  train_size=(32 2 10 8 3)   # image side, batch, classes, train size, steps
  optim_models=(resnet18)
  bench_flags=(--threads=1)
  export OMP_NUM_THREADS=1
  threads=(--threads 1)
else
  build="build-gpu"
  device=cuda
  r50=(--model resnet50 --precision bf16 --channels-last --batch 256 --steps 30 --warmup 10)
  bert=(--model bert_large --precision bf16 --seq-len 128 --batch 64 --steps 20 --warmup 5)
  train_size=(224 256 1000 2048 40)
  optim_models=(resnet50 bert_large)
  bench_flags=()
  threads=()
fi

# step NAME COMMAND...: runs one step with its output in $out/NAME.log, records status and time.
step() {
  local name=$1
  shift
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$steps_file"
  return $rc
}

unpack() {
  # shellcheck source=scripts/gpu/unpack.sh
  source scripts/gpu/unpack.sh "$debs"
}

# Its log holds the line `batchlab: LibTorch 2.x, CUDA ON, NCCL ON` that results.json quotes.
configure() {
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DBATCHLAB_WERROR="${BATCHLAB_WERROR:-OFF}" -DBATCHLAB_SERVE=OFF
}

targets=(batchlab core_optim_tests core_train_tests optim_device_bench)
build_targets() {
  if ((rehearse)); then
    # The rehearsal reuses what the suite's build made; it only checks every binary is there.
    for t in batchlab tests/core_optim_tests tests/core_train_tests bench/optim_device_bench; do
      [[ -x "$build/$t" ]] || { echo "missing $build/$t (build it first)"; return 1; }
    done
    return 0
  fi
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" -- -k 0
}

tests() {
  local rc=0
  "$build"/batchlab version || rc=1
  if ((rehearse)); then
    # A few of each suite: the command lines, not the suites, are under test here.
    "$build"/tests/core_optim_tests --gtest_brief=1 --gtest_filter='ForeachLars.*' || rc=1
    "$build"/tests/core_train_tests --gtest_brief=1 --gtest_filter='StepTimer.*:Device.*' || rc=1
  else
    "$build"/tests/core_optim_tests --gtest_brief=1 || rc=1
    "$build"/tests/core_train_tests --gtest_brief=1 \
      --gtest_filter='StepTimer.*:Device.*:DeviceSelection.*:StepHostReads.*:Accumulation.*' || rc=1
  fi
  return $rc
}

bench_resnet50() {
  "$build"/batchlab bench --device "$device" --optimizer lars --format json "${r50[@]}" \
    "${threads[@]}" >"$out/bench_resnet50.json"
}

bench_bert() {
  "$build"/batchlab bench --device "$device" --optimizer lamb --format json "${bert[@]}" \
    "${threads[@]}" >"$out/bench_bert.json"
}

# The same model, batch, precision and optimizer as bench_resnet50, through the trainer, on
# experiments/configs/resnet50_synthetic.toml (the rehearsal shrinks it with --set).
train_synthetic() {
  local size=${train_size[0]} batch=${train_size[1]} classes=${train_size[2]}
  local n=${train_size[3]} nsteps=${train_size[4]}
  local sets=(--set "data.synthetic_size=$size" --set "data.synthetic_classes=$classes"
    --set "batch.global=$batch" --set "data.train_size=$n" --set "data.test_size=$batch"
    --set "data.eval_train_samples=$batch" --set "schedule.steps=$nsteps"
    --set "train.device=$device")
  if ((rehearse)); then sets+=(--set train.precision=fp32 --set train.threads=1); fi
  rm -f "$out/train.db"
  "$build"/batchlab train experiments/configs/resnet50_synthetic.toml --db "$out/train.db" \
    "${sets[@]}" &&
    "$build"/batchlab query --db "$out/train.db" --format json \
      "SELECT step, samples_per_s FROM steps ORDER BY step" >"$out/train_steps.json"
}

optimizers() {
  local rc=0
  for m in "${optim_models[@]}"; do
    "$build"/bench/optim_device_bench --device="$device" --model="$m" --benchmark_format=json \
      "${bench_flags[@]}" >"$out/optim_$m.json" || rc=1
  done
  return $rc
}

if ((!rehearse)); then step unpack unpack; else printf 'unpack\tskipped\t0\n' | tee -a "$steps_file"; fi
if ((!rehearse)); then step configure configure; else printf 'configure\tskipped\t0\n' | tee -a "$steps_file"; fi
step build build_targets
step tests tests
step bench_resnet50 bench_resnet50
step bench_bert bench_bert
step train_synthetic train_synthetic
step optimizers optimizers
mode=gpu
((rehearse)) && mode=rehearsal
python3 scripts/gpu/job_results.py "$out" --mode "$mode" >"$out/results.log" 2>&1
rc=$?
printf 'results\t%s\t0\n' "$rc" | tee -a "$steps_file"
cat "$out/results.log"
# Exit status: the results file's verdict (every step ran and produced its figures).
exit $rc
