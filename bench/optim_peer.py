"""Python peer of bench/optim_bench.cpp: one optimizer step over ResNet-50's parameters in PyTorch,
side by side with batchlab's fused LARS and LAMB, in one run on one machine.

The parameter set is torchvision's resnet50() (161 float32 tensors, 25,557,032 values), the same
shapes bench/optim_bench.cpp writes out; gradients are fixed random tensors, and one untimed step
allocates the optimizer state, as there. Hyper-parameters match optim_bench.cpp: SGD-momentum and
LARS with momentum 0.9 and weight decay 5e-5; AdamW and LAMB with weight decay 0.01, default betas;
batchlab's LAMB with global gradient clipping at 1.0 (its default, part of its cost).

Python steps timed (torch is the virtualenv's, the build batchlab links):
  torch.optim.SGD momentum   default (for-loop on CPU), foreach=True
  torch.optim.AdamW          default, foreach=True, fused=True
  timm.optim.Lamb, timm.optim.Lars   when timm imports (it is in scripts/python/requirements.txt)

Rounds alternate: optim_bench (batchlab's BM_Lars, BM_Lamb and LibTorch C++ SGD/AdamW), then every
Python step; the medians over all rounds give the ratios the project targets
(docs/performance.md): LAMB <= 0.5x AdamW(foreach), LARS <= 0.8x SGD(foreach).

  .venv/bin/python bench/optim_peer.py --bench build/bench/optim_bench --threads 2 --rounds 3
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torchvision


def parameters_with_grads():
    torch.manual_seed(0)
    params = []
    for p in torchvision.models.resnet50().parameters():
        w = (torch.randn(p.shape) * 0.05).requires_grad_(True)
        w.grad = torch.randn(p.shape) * 0.01
        params.append(w)
    return params


def python_steps():
    """name -> a function building the optimizer over fresh parameters."""
    steps = {
        "torch SGD-momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=5e-5),
        "torch SGD-momentum foreach": lambda p: torch.optim.SGD(
            p, lr=0.1, momentum=0.9, weight_decay=5e-5, foreach=True),
        "torch AdamW": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01),
        "torch AdamW foreach": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01, foreach=True),
        "torch AdamW fused": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01, fused=True),
    }
    try:
        import timm.optim
        steps["timm Lamb (clip 1.0)"] = lambda p: timm.optim.Lamb(
            p, lr=1e-3, weight_decay=0.01, max_grad_norm=1.0)
        steps["timm Lars"] = lambda p: timm.optim.Lars(p, lr=0.1, momentum=0.9, weight_decay=5e-5)
    except ImportError as e:  # reported, not fatal: the torch peers still measure
        print(f"timm not importable ({e}); its Lamb/Lars are left out", file=sys.stderr)
    return steps


def time_step(make, steps):
    params = parameters_with_grads()
    opt = make(params)
    opt.step()  # allocates the state, untimed
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run_cpp(bench, threads, repetitions):
    """Medians (ms) of batchlab's fused LARS/LAMB and LibTorch C++ SGD/AdamW, from optim_bench's
    JSON file (--benchmark_out; its console output is its own table)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [bench, f"--threads={threads}", f"--benchmark_repetitions={repetitions}",
             "--benchmark_report_aggregates_only=true", f"--benchmark_out={out.name}",
             "--benchmark_out_format=json",
             "--benchmark_filter=^BM_(Lars|Lamb|SgdMomentum_LibTorch|AdamW_LibTorch)/"],
            check=True, capture_output=True, text=True)
        doc = json.load(open(out.name))
    names = {"BM_Lars": "batchlab LARS (fused)", "BM_Lamb": "batchlab LAMB (fused, clip 1.0)",
             "BM_SgdMomentum_LibTorch": "LibTorch C++ SGD-momentum",
             "BM_AdamW_LibTorch": "LibTorch C++ AdamW"}
    result = {}
    for b in doc["benchmarks"]:
        name = b["run_name"].split("/")[0]
        if b.get("aggregate_name") == "median" and name in names:
            result[names[name]] = b["real_time"]  # ms (the bench's unit)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/bench/optim_bench", help="batchlab's optim_bench binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=15, help="timed Python steps per round")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    steps = python_steps()
    samples = {}
    for r in range(args.rounds):
        for name, ms in run_cpp(args.bench, args.threads, 5).items():
            samples.setdefault(name, []).append(ms)
        for name, make in steps.items():
            samples.setdefault(name, []).append(time_step(make, args.steps))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"torch {torch.__version__}, {args.threads} threads, {args.rounds} rounds "
          f"(median of per-round medians, ms per step over ResNet-50's 25.6M parameters)")
    for k, v in med.items():
        print(f"  {k:34s} {v:8.2f} ms   rounds: " + ", ".join(f"{x:.2f}" for x in samples[k]))

    def ratio(a, b):
        if a in med and b in med:
            print(f"  {a} / {b}: {med[a] / med[b]:.2f}x")
    print("ratios:")
    ratio("batchlab LAMB (fused, clip 1.0)", "torch AdamW foreach")
    ratio("batchlab LAMB (fused, clip 1.0)", "torch AdamW fused")
    ratio("batchlab LAMB (fused, clip 1.0)", "torch AdamW")
    ratio("batchlab LAMB (fused, clip 1.0)", "timm Lamb (clip 1.0)")
    ratio("batchlab LARS (fused)", "torch SGD-momentum foreach")
    ratio("batchlab LARS (fused)", "torch SGD-momentum")
    ratio("batchlab LARS (fused)", "timm Lars")


if __name__ == "__main__":
    main()
