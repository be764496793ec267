"""Python peer of bench/optim_bench.cpp: one optimizer step over ResNet-50's parameters in PyTorch,
side by side with batchlab's fused LARS and LAMB, in one run on one machine; and the references of
batchlab's Muon (torch.optim.Muon with AdamW, on a small GPT-2-style decoder), Schedule-Free AdamW
(schedulefree) and Lion (lion-pytorch) beside them.

The parameter set is torchvision's resnet50() (161 float32 tensors, 25,557,032 values), the same
shapes bench/optim_bench.cpp writes out; gradients are fixed random tensors, and one untimed step
allocates the optimizer state, as there. Hyper-parameters match optim_bench.cpp: SGD-momentum and
LARS with momentum 0.9 and weight decay 5e-5; AdamW and LAMB with weight decay 0.01, default betas;
batchlab's LAMB with global gradient clipping at 1.0 (its default, part of its cost).

Python steps timed (torch is the virtualenv's, the build batchlab links):
  torch.optim.SGD momentum   default (for-loop on CPU), foreach=True
  torch.optim.AdamW          default, foreach=True, fused=True
  timm.optim.Lamb, timm.optim.Lars   when timm imports (it is in scripts/python/requirements.txt)
  torch.optim.Muon + torch.optim.AdamW(foreach)   the decoder of optim_bench.cpp's BM_Muon
  schedulefree.AdamWScheduleFree     foreach (its default), weight decay 0.01, lr 1e-3
  lion_pytorch.Lion                  its default per-tensor step, and lion_pytorch.foreach.Lion

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


def decoder_parameters_with_grads():
    """bench/optim_bench.cpp's Decoder: a GPT-2-style decoder of width 256, 4 layers, vocabulary
    8192, context 256 (Hugging Face Conv1D shapes [in, out]); (matrices, others)."""
    torch.manual_seed(0)
    width, layers = 256, 4

    def param(*shape):
        w = (torch.randn(shape) * 0.02).requires_grad_(True)
        w.grad = torch.randn(shape) * 0.01
        return w
    matrices, others = [], [param(8192, width), param(256, width)]
    for _ in range(layers):
        matrices += [param(width, 3 * width), param(width, width), param(width, 4 * width),
                     param(4 * width, width)]
        others += [param(n) for n in (width, width, 3 * width, width, width, width, 4 * width,
                                      width)]
    others += [param(width), param(width)]
    return matrices, others


class MuonWithAdamW:
    """torch.optim.Muon for the decoder's hidden matrices and torch.optim.AdamW (foreach) for the
    rest, stepped together: what batchlab's Muon does in one optimizer."""

    def __init__(self, parts):
        matrices, others = parts
        self.muon = torch.optim.Muon(matrices, lr=0.02)
        self.adamw = torch.optim.AdamW(others, lr=3e-4, weight_decay=0.1, foreach=True)

    def step(self):
        self.muon.step()
        self.adamw.step()


def new_optimizer_steps():
    """name -> (a function building the optimizer over fresh parameters, the parameter maker):
    the references of batchlab's Muon, Schedule-Free AdamW and Lion."""
    steps = {"torch Muon + AdamW (decoder)": (MuonWithAdamW, decoder_parameters_with_grads)}
    try:
        import schedulefree

        def make_sf(p):
            opt = schedulefree.AdamWScheduleFree(p, lr=1e-3, weight_decay=0.01)
            opt.train()
            return opt
        steps["schedulefree AdamWScheduleFree"] = (make_sf, parameters_with_grads)
    except ImportError as e:
        print(f"schedulefree not importable ({e}); left out", file=sys.stderr)
    try:
        import lion_pytorch
        import lion_pytorch.foreach
        steps["lion-pytorch Lion"] = (
            lambda p: lion_pytorch.Lion(p, lr=1e-4, weight_decay=0.1), parameters_with_grads)
        steps["lion-pytorch Lion foreach"] = (
            lambda p: lion_pytorch.foreach.Lion(p, lr=1e-4, weight_decay=0.1),
            parameters_with_grads)
    except ImportError as e:
        print(f"lion-pytorch not importable ({e}); left out", file=sys.stderr)
    return steps


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


def time_step(make, steps, parameters=None):
    params = (parameters or parameters_with_grads)()
    opt = make(params)
    opt.step()  # allocates the state, untimed
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


CPP_FILTER = ("^BM_(Lars|Lamb|SgdMomentum_LibTorch|AdamW_LibTorch|ScheduleFreeAdamW|Lion|"
              "Muon)/")


def run_cpp(bench, threads, repetitions, only=None):
    """Medians (ms) of batchlab's fused LARS/LAMB and LibTorch C++ SGD/AdamW, from optim_bench's
    JSON file (--benchmark_out; its console output is its own table)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [bench, f"--threads={threads}", f"--benchmark_repetitions={repetitions}",
             "--benchmark_report_aggregates_only=true", f"--benchmark_out={out.name}",
             "--benchmark_out_format=json",
             f"--benchmark_filter={f'^BM_{only}/' if only else CPP_FILTER}"],
            check=True, capture_output=True, text=True)
        doc = json.load(open(out.name))
    names = {"BM_Lars": "batchlab LARS (fused)", "BM_Lamb": "batchlab LAMB (fused, clip 1.0)",
             "BM_SgdMomentum_LibTorch": "LibTorch C++ SGD-momentum",
             "BM_AdamW_LibTorch": "LibTorch C++ AdamW",
             "BM_ScheduleFreeAdamW": "batchlab Schedule-Free AdamW (foreach)",
             "BM_Lion": "batchlab Lion (foreach)",
             "BM_Muon": "batchlab Muon (decoder)"}
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
    ap.add_argument("--only", choices=["Muon", "ScheduleFreeAdamW", "Lion"],
                    help="one of the newer optimizers against its reference alone (shorter "
                         "rounds, so more of them fit between a loaded machine's swings)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    steps = python_steps()
    new_steps = new_optimizer_steps()
    if args.only:
        key = {"Muon": "Muon", "ScheduleFreeAdamW": "schedulefree", "Lion": "Lion"}[args.only]
        steps = {}
        new_steps = {k: v for k, v in new_steps.items() if key in k}
    samples = {}
    for r in range(args.rounds):
        for name, ms in run_cpp(args.bench, args.threads, 5, args.only).items():
            samples.setdefault(name, []).append(ms)
        for name, make in steps.items():
            samples.setdefault(name, []).append(time_step(make, args.steps))
        for name, (make, parameters) in new_steps.items():
            # Muon's Newton-Schulz makes a step ~100x a memory-bound one: fewer timed steps.
            n = max(3, args.steps // 5) if "Muon" in name else args.steps
            samples.setdefault(name, []).append(time_step(make, n, parameters))
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
    ratio("batchlab Muon (decoder)", "torch Muon + AdamW (decoder)")
    ratio("batchlab Schedule-Free AdamW (foreach)", "schedulefree AdamWScheduleFree")
    ratio("batchlab Lion (foreach)", "lion-pytorch Lion")
    ratio("batchlab Lion (foreach)", "lion-pytorch Lion foreach")


if __name__ == "__main__":
    main()
