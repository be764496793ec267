"""Golden optimizer trajectories of Muon, Schedule-Free AdamW and Lion, from their reference
packages, for tests/core/optim/reference_golden_test.cpp.

  .venv/bin/python scripts/python/make_golden_optim.py [--out tests/data/golden/optim_packages]

References (pinned in scripts/python/requirements.txt; the versions are written into every file):
  muon_*        torch.optim.Muon (torch 2.14.1) for the 2-D hidden matrices and torch.optim.AdamW
                for every other parameter, stepped together: the split Muon's users make (Muon is
                for hidden matrices only; embeddings, heads, biases and norms take AdamW).
  schedulefree_* schedulefree.AdamWScheduleFree (schedulefree 1.4.1), foreach=False; at some steps
                the evaluation weights too (opt.eval(), read, opt.train()), as a trainer does.
  lion_*        lion_pytorch.Lion (lion-pytorch 0.2.5), the per-tensor update_fn (use_triton off).

Every parameter, gradient and state is float64, except where the reference itself rounds: Muon's
Newton-Schulz iteration casts its input to bfloat16 (torch's `grad.bfloat16()`), so its files carry
"ns_dtype": "bf16". The `muon_ns_fp32` file runs torch's own code with that cast made a float32
cast (Tensor.bfloat16 patched for the duration of the step), the reference of batchlab's
optim.ns_dtype = "fp32". Each file holds the tolerance its test applies and why.

Gradients are drawn from a seeded generator and recorded before each step (the schedule-free
package divides p.grad in place). The learning rate of each step is recorded; a group's rate is that
times the group's lr_scale.
"""
import argparse
import contextlib
import json
import os
from importlib.metadata import version

import torch

# Muon's bf16 files: the C++ path runs the same ATen ops in the same order on the same LibTorch, and
# on the machine that wrote the files it reproduces torch bit for bit (measured: error 0). A bf16
# matrix product's bits depend on its summation order, though: on a CPU whose bf16 GEMM kernel sums
# differently, elements of the orthogonalized update move by one bf16 unit (2^-8 relative), about
# 1e-4 relative on the parameters here, the same size as the whole difference between a bf16 and
# an fp32 iteration. No tolerance can absorb the first and still catch the second, so the bound is
# a float64 one, and each bf16 file carries a canary (one bf16 product and its bits on the writing
# machine): where the canary's bits differ, the test skips and says to regenerate the files.
MUON_BF16_TOL = 1e-12
FLOAT64_TOL = 1e-9
# fp32 Newton-Schulz: float32 rounding of the update (2^-24 relative), times lr; measured 0 here.
MUON_FP32_TOL = 1e-6


def draw(gen, shape, scale):
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def make_params(specs, seed):
    gen = torch.Generator().manual_seed(seed)
    params = []
    for name, shape, scale in specs:
        init = draw(gen, shape, scale) if scale > 0 else torch.zeros(shape, dtype=torch.float64)
        params.append((name, shape, init.requires_grad_(True)))
    return params, gen


@contextlib.contextmanager
def ns_cast_to_float32():
    """torch's Newton-Schulz casts with grad.bfloat16(); for the fp32 reference that one cast is a
    float32 cast, everything else is torch's own code."""
    original = torch.Tensor.bfloat16
    torch.Tensor.bfloat16 = lambda self, *a, **k: self.float()
    try:
        yield
    finally:
        torch.Tensor.bfloat16 = original


def bf16_gemm_canary():
    """One bf16 product of the Newton-Schulz Gram shape, with its bits on this machine."""
    gen = torch.Generator().manual_seed(99)
    a = torch.randn((12, 48), generator=gen).bfloat16()
    product = a @ a.T
    return {"a_shape": [12, 48], "a": flat(a.double()), "product": flat(product.double())}


def run(params, gen, optimizers, lrs, grad_scale, set_lr, before_step=None, after_step=None):
    """Steps every optimizer once per lr, feeding fresh gradients; returns the step records."""
    steps = []
    for k, lr in enumerate(lrs):
        set_lr(lr)
        grads = [draw(gen, shape, grad_scale) for _, shape, _ in params]
        for (_, _, p), g in zip(params, grads):
            p.grad = g.clone()
        with (before_step() if before_step else contextlib.nullcontext()):
            for opt in optimizers:
                opt.step()
        record = {"lr": lr, "grads": [flat(g) for g in grads],
                  "expected": [flat(p) for _, _, p in params]}
        if after_step:
            after_step(k, record)
        steps.append(record)
    return steps


def document(kind, reference, options, groups, params, init, steps, tolerance, why):
    return {
        "optimizer": kind,
        "reference": reference,
        "options": options,
        "groups": groups,
        "params": [{"name": n, "shape": list(s), "init": flat(i)}
                   for (n, s, _), i in zip(params, init)],
        "steps": steps,
        "tolerance": tolerance,
        "tolerance_why": why,
    }


# Muon: two hidden matrices (one tall, one wide: torch transposes the tall one and scales its rate
# by sqrt(rows / cols)), an embedding (2-D, but AdamW as users route it), a bias and a norm scale.
MUON_PARAMS = [("embed.weight", [7, 4], 0.5), ("fc1.weight", [12, 4], 0.3),
               ("fc1.bias", [12], 0.1), ("fc2.weight", [3, 12], 0.3), ("norm.weight", [12], 1.0)]


def muon_case(name, seed, muon_kw, ns_dtype, adamw_scale=0.1):
    params, gen = make_params(MUON_PARAMS, seed)
    init = [p.detach().clone() for _, _, p in params]
    tensors = [p for _, _, p in params]
    wd = muon_kw.get("weight_decay", 0.1)
    groups = [  # kind, weight decay, lr scale, members
        {"kind": "muon", "weight_decay": wd, "lr_scale": 1.0, "params": [1, 3]},
        {"kind": "adamw", "weight_decay": wd, "lr_scale": adamw_scale, "params": [0]},
        {"kind": "adamw", "weight_decay": 0.0, "lr_scale": adamw_scale, "params": [2, 4]},
    ]
    betas, eps = (0.9, 0.95), 1e-8
    muon = torch.optim.Muon([tensors[i] for i in groups[0]["params"]], lr=1.0, **muon_kw)
    adamw = torch.optim.AdamW(
        [{"params": [tensors[i] for i in g["params"]], "weight_decay": g["weight_decay"]}
         for g in groups[1:]], lr=1.0, betas=betas, eps=eps, foreach=False)

    def set_lr(lr):
        for g in muon.param_groups:
            g["lr"] = lr
        for g in adamw.param_groups:
            g["lr"] = lr * adamw_scale

    lrs = [0.02 * f for f in (0.25, 0.5, 1.0, 1.0, 0.8, 0.6, 0.4)]
    cast = ns_cast_to_float32 if ns_dtype == "fp32" else None
    steps = run(params, gen, [muon, adamw], lrs, 0.05, set_lr, before_step=cast)
    mg = muon.param_groups[0]
    options = {"momentum": mg["momentum"], "nesterov": mg["nesterov"],
               "ns_coefficients": list(mg["ns_coefficients"]), "ns_steps": mg["ns_steps"],
               "ns_eps": mg["eps"], "adjust_lr": mg["adjust_lr_fn"] or "original",
               "ns_dtype": ns_dtype, "betas": list(betas), "eps": eps}
    if ns_dtype == "bf16":
        tol, why = MUON_BF16_TOL, ("Newton-Schulz in bfloat16 as torch runs it: bitwise equal on "
                                   "a CPU whose bf16 GEMM sums as the writing machine's (the "
                                   "canary checks it); elsewhere regenerate the files")
    else:
        tol, why = MUON_FP32_TOL, "Newton-Schulz in float32: float32 rounding of the update"
    ref = (f"torch.optim.Muon (torch {torch.__version__}) for groups of kind muon, "
           f"torch.optim.AdamW (foreach=False) for kind adamw"
           + ("; Newton-Schulz input cast to float32 instead of bfloat16" if ns_dtype == "fp32"
              else ""))
    doc = document("muon", ref, options, groups, params, init, steps, tol, why)
    if ns_dtype == "bf16":
        doc["bf16_gemm_canary"] = bf16_gemm_canary()
    return name, doc


SMALL_PARAMS = [("conv.weight", [4, 3, 3, 3], 0.2), ("fc.weight", [5, 6], 0.3),
                ("fc.bias", [5], 0.0), ("norm.weight", [6], 1.0)]


def schedulefree_case(name, seed, kw, decay, lrs, eval_at):
    import schedulefree
    params, gen = make_params(SMALL_PARAMS, seed)
    init = [p.detach().clone() for _, _, p in params]
    tensors = [p for _, _, p in params]
    groups = [{"weight_decay": decay, "lr_scale": 1.0, "params": [0, 1]},
              {"weight_decay": 0.0, "lr_scale": 1.0, "params": [2, 3]}]
    opt = schedulefree.AdamWScheduleFree(
        [{"params": [tensors[i] for i in g["params"]], "weight_decay": g["weight_decay"]}
         for g in groups], lr=1.0, foreach=False, **kw)
    opt.train()

    def set_lr(lr):
        for g in opt.param_groups:
            g["lr"] = lr

    def after_step(k, record):
        if k in eval_at:  # the trainer's evaluation: x-sequence weights, then back to y
            opt.eval()
            record["eval_expected"] = [flat(p) for p in tensors]
            opt.train()

    steps = run(params, gen, [opt], lrs, 0.1, set_lr, after_step=after_step)
    g0 = opt.param_groups[0]
    options = {"betas": list(g0["betas"]), "eps": g0["eps"], "r": g0["r"],
               "weight_lr_power": g0["weight_lr_power"], "warmup_steps": g0["warmup_steps"]}
    ref = (f"schedulefree.AdamWScheduleFree (schedulefree {version('schedulefree')}, "
           f"torch {torch.__version__}), foreach=False, float64")
    return name, document("schedulefree_adamw", ref, options, groups, params, init, steps,
                          FLOAT64_TOL, "float64 throughout")


def lion_case(name, seed, betas, decay):
    from lion_pytorch import Lion
    params, gen = make_params(SMALL_PARAMS, seed)
    init = [p.detach().clone() for _, _, p in params]
    tensors = [p for _, _, p in params]
    groups = [{"weight_decay": decay, "lr_scale": 1.0, "params": [0, 1]},
              {"weight_decay": 0.0, "lr_scale": 1.0, "params": [2, 3]}]
    opt = Lion([{"params": [tensors[i] for i in g["params"]], "weight_decay": g["weight_decay"]}
                for g in groups], lr=1e-4, betas=betas, use_triton=False)

    def set_lr(lr):
        for g in opt.param_groups:
            g["lr"] = lr

    lrs = [1e-3 * f for f in (0.5, 1.0, 1.0, 0.75, 0.5, 0.25)]
    steps = run(params, gen, [opt], lrs, 0.1, set_lr)
    ref = (f"lion_pytorch.Lion (lion-pytorch {version('lion-pytorch')}, torch "
           f"{torch.__version__}), use_triton=False, float64")
    return name, document("lion", ref, {"betas": list(betas)}, groups, params, init, steps,
                          FLOAT64_TOL, "float64 throughout")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data/golden/optim_packages")
    args = ap.parse_args()
    torch.set_num_threads(1)  # one summation order for the bf16 GEMMs
    os.makedirs(args.out, exist_ok=True)
    warm = [0.01 * (k + 1) / 4 for k in range(4)] + [0.01] * 4  # a linear warmup, then constant
    cases = [
        muon_case("muon_default", 1, {}, "bf16"),
        muon_case("muon_plain_match_rms", 2,
                  {"momentum": 0.9, "nesterov": False, "adjust_lr_fn": "match_rms_adamw",
                   "weight_decay": 0.01}, "bf16", adamw_scale=1.0),
        muon_case("muon_ns_fp32", 3, {"ns_steps": 4}, "fp32"),
        schedulefree_case("schedulefree_default", 4, {}, 0.0, warm, {2, 7}),
        schedulefree_case("schedulefree_decay_poly", 5,
                          {"betas": (0.95, 0.99), "r": 1.0, "weight_lr_power": 1.0}, 0.05,
                          [0.02, 0.03, 0.01, 0.02, 0.02, 0.015], {0, 3, 5}),
        lion_case("lion_default", 6, (0.9, 0.99), 0.0),
        lion_case("lion_decay", 7, (0.95, 0.98), 0.1),
    ]
    for name, doc in cases:
        path = os.path.join(args.out, name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=None, separators=(",", ":"))
            f.write("\n")
        print(f"{path}: {len(doc['steps'])} steps, tolerance {doc['tolerance']:g}")


if __name__ == "__main__":
    main()
