"""Folds the outputs of scripts/gpu/job.sh into ONE results file, OUT/results.json, and prints a
summary. Exit status 0 when every step ran (status 0) and every figure is there; 1 otherwise.

  python3 scripts/gpu/job_results.py OUT --mode gpu|rehearsal

results.json: {"mode", "steps": [{"name", "status", "seconds"}], "version",
  "bench_resnet50": {images_per_s, mfu, median_step_s}, "bench_bert": {tokens_per_s, mfu, ...},
  "train_synthetic": {images_per_s (median of the steps after the first third), steps,
                      "vs_bench": train images/s / bench images/s},
  "optimizers": {model: {benchmark: ms per step, "lamb_vs_fused_adamw", "lars_vs_fused_sgd"}},
  "targets": {"resnet50_images_per_s >= 3500", "bert_large_mfu >= 0.40"} (true/false; gpu mode),
  "complete": every step succeeded and every figure is present}
"""
import argparse
import json
import os
import statistics
import sys


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def steps_of(out):
    rows = []
    path = os.path.join(out, "steps.tsv")
    if os.path.exists(path):
        for line in open(path):
            name, status, seconds = line.rstrip("\n").split("\t")
            rows.append({"name": name, "status": status, "seconds": int(seconds)})
    return rows


def bench_figures(doc):
    if not doc:
        return None
    keys = ("samples_per_s", "tokens_per_s", "mfu", "median_step_s", "batch", "precision",
            "device", "device_name", "model", "optimizer")
    return {k: doc.get(k) for k in keys}


def train_figures(out, bench):
    rows = read_json(os.path.join(out, "train_steps.json"))
    if not rows:
        return None
    rates = [r["samples_per_s"] for r in rows if r.get("samples_per_s")]
    if not rates:
        return None
    # The first third covers cuDNN's autotuning and allocator growth (bench's warm-up steps).
    timed = rates[len(rates) // 3:] or rates
    fig = {"steps": len(rates), "samples_per_s": statistics.median(timed)}
    if bench and bench.get("samples_per_s"):
        fig["vs_bench"] = fig["samples_per_s"] / bench["samples_per_s"]
    return fig


def optimizer_figures(out):
    figs = {}
    for name in sorted(os.listdir(out)):
        if not (name.startswith("optim_") and name.endswith(".json")):
            continue
        doc = read_json(os.path.join(out, name))
        if not doc or "benchmarks" not in doc:
            continue
        # "BM_Lamb/min_time:0.200/real_time" -> "BM_Lamb"; times in ms (the benchmarks' unit).
        ms = {b["name"].split("/")[0]: b["real_time"] for b in doc["benchmarks"]
              if "error_message" not in b}
        fig = {"ms_per_step": ms}
        if ms.get("BM_Lamb") and ms.get("BM_FusedAdamW_Torch"):
            fig["lamb_vs_fused_adamw"] = ms["BM_Lamb"] / ms["BM_FusedAdamW_Torch"]
        if ms.get("BM_Lars") and ms.get("BM_FusedSgdMomentum_Torch"):
            fig["lars_vs_fused_sgd"] = ms["BM_Lars"] / ms["BM_FusedSgdMomentum_Torch"]
        figs[name[len("optim_"):-len(".json")]] = fig
    return figs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mode", choices=["gpu", "rehearsal"], required=True)
    args = ap.parse_args()
    out = args.out
    res = {"mode": args.mode, "steps": steps_of(out)}
    lines = []
    for log in ("configure.log", "tests.log"):  # the configure summary, `batchlab version`
        path = os.path.join(out, log)
        if os.path.exists(path):
            lines += [l.rstrip() for l in open(path, errors="replace")
                      if "batchlab: LibTorch" in l or "GPU support" in l or "LibTorch" in l][:3]
    res["version"] = lines
    res["bench_resnet50"] = bench_figures(read_json(os.path.join(out, "bench_resnet50.json")))
    res["bench_bert"] = bench_figures(read_json(os.path.join(out, "bench_bert.json")))
    res["train_synthetic"] = train_figures(out, res["bench_resnet50"])
    res["optimizers"] = optimizer_figures(out)
    if args.mode == "gpu":
        r50 = (res["bench_resnet50"] or {}).get("samples_per_s")
        mfu = (res["bench_bert"] or {}).get("mfu")
        res["targets"] = {
            "resnet50_images_per_s >= 3500": r50 is not None and r50 >= 3500,
            "bert_large_mfu >= 0.40": mfu is not None and mfu >= 0.40,
        }
    missing = [k for k in ("bench_resnet50", "bench_bert", "train_synthetic") if not res[k]]
    if not res["optimizers"]:
        missing.append("optimizers")
    failed = [s["name"] for s in res["steps"] if s["status"] not in ("0", "skipped")]
    res["complete"] = not missing and not failed
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=2, sort_keys=True)
    print(json.dumps({k: res[k] for k in res if k != "steps"}, indent=2, sort_keys=True))
    if failed:
        print("failed steps:", ", ".join(failed))
    if missing:
        print("missing figures:", ", ".join(missing))
    return 0 if res["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
