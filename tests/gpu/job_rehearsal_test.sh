#!/usr/bin/env bash
# ctest gpu_job_rehearsal: runs scripts/gpu/job.sh --rehearse against the build directory given
# as $1 and checks its one results file: written, well-formed, every step run, every figure there
# (the train/bench ratio and the optimizer ratios included).
set -euo pipefail
build=${1:?usage: job_rehearsal_test.sh BUILD_DIR}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
OUT=$out BATCHLAB_BUILD_DIR=$build bash scripts/gpu/job.sh --rehearse
python3 - "$out/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["mode"] == "rehearsal", r["mode"]
names = [s["name"] for s in r["steps"]]
for step in ["build", "tests", "bench_resnet50", "bench_bert", "train_synthetic", "optimizers"]:
    assert step in names, f"step {step} missing: {names}"
assert all(s["status"] in ("0", "skipped") for s in r["steps"]), r["steps"]
assert r["bench_resnet50"]["samples_per_s"] > 0
assert r["bench_bert"]["tokens_per_s"] > 0
assert r["train_synthetic"]["samples_per_s"] > 0 and r["train_synthetic"]["vs_bench"] > 0
opt = r["optimizers"]["resnet18"]
for b in ["BM_Lars", "BM_Lamb", "BM_Lamb_PerTensor", "BM_FusedSgdMomentum_Torch", "BM_FusedAdamW_Torch"]:
    assert opt["ms_per_step"][b] > 0, b
assert opt["lamb_vs_fused_adamw"] > 0 and opt["lars_vs_fused_sgd"] > 0
assert r["complete"] is True
print("results.json complete:", sys.argv[1])
PY
