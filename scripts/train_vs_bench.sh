#!/usr/bin/env bash
# The trainer's overhead against `batchlab bench` on the same model, batch and optimizer, in one
# run: bench first, then `batchlab train` on experiments/configs/resnet50_synthetic.toml with the
# same sizes, and the ratio of their images/s (train's: the median of its steps after the first).
# Usage: scripts/train_vs_bench.sh BUILD_DIR DEVICE BATCH STEPS THREADS PRECISION
#   scripts/train_vs_bench.sh build cpu 8 6 1 fp32          (docs/performance.md)
set -euo pipefail
build=${1:-build} device=${2:-cpu} batch=${3:-8} steps=${4:-6} threads=${5:-1} precision=${6:-fp32}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build"/batchlab bench --model resnet50 --device "$device" --precision "$precision" \
  --batch "$batch" --steps "$((steps - 1))" --warmup 1 --optimizer lars --threads "$threads" \
  --format json >"$work/bench.json"
"$build"/batchlab train experiments/configs/resnet50_synthetic.toml --db "$work/train.db" \
  --set "batch.global=$batch" --set "data.train_size=$((4 * batch))" \
  --set "data.test_size=$batch" --set "data.eval_train_samples=$batch" \
  --set "schedule.steps=$steps" --set "train.device=$device" --set "train.threads=$threads" \
  --set "train.precision=$precision" >"$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }
"$build"/batchlab query --db "$work/train.db" --format json \
  "SELECT step, samples_per_s FROM steps ORDER BY step" >"$work/steps.json"
python3 - "$work/bench.json" "$work/steps.json" <<'PY'
import json, statistics, sys
bench = json.load(open(sys.argv[1]))
rates = [r["samples_per_s"] for r in json.load(open(sys.argv[2]))]
train = statistics.median(rates[1:] or rates)
print(f"bench: {bench['samples_per_s']:.3f} images/s (median step {bench['median_step_s']:.3f} s, "
      f"{bench['input']}, batch {bench['batch']}, {bench['threads']} thread(s))")
print(f"train: {train:.3f} images/s (median of steps 1..{len(rates) - 1}; per step: "
      + ", ".join(f"{r:.3f}" for r in rates) + ")")
print(f"train / bench: {train / bench['samples_per_s']:.3f}")
PY
