#!/usr/bin/env python3
"""torchvision reference data for tests/models/torchvision_equivalence_test.cpp.

Runs under the project virtualenv's Python (.venv/bin/python: the torch whose LibTorch batchlab
links, and torchvision; made by scripts/setup.sh).

    torchvision_reference.py OUTDIR
        For resnet18 and resnet50 (weights=None, seed 0, one thread): two train-mode forwards on
        random batches so the BN running statistics are not trivial, then writes
          OUTDIR/<arch>_state.pt    torch.save(model.state_dict())           (an OrderedDict)
          OUTDIR/<arch>_io.pt       input [2, 3, 64, 64], labels [2], eval-mode logits, train-mode
                                    logits and loss of one more train-mode forward
          OUTDIR/<arch>_buffers.pt  every buffer after that train-mode forward
          OUTDIR/<arch>_grads.pt    every parameter's gradient of
                                    cross_entropy(train logits, labels)

    torchvision_reference.py --check-export ARCH STATE_DICT IO_FILE
        Loads STATE_DICT (written by batchlab's save_state_dict) with torch.load into a fresh
        torchvision ARCH through load_state_dict(strict=True), checks that its keys come in
        torchvision's order, and that the model's eval-mode logits on IO_FILE's "input" match its
        "logits" (relative error below 1e-4). Exit 0 and "OK ..." when all holds, 1 otherwise.

Exit code 3 (with a message) when torch or torchvision cannot be imported.
"""
import os
import sys

try:
    import torch
    import torch.nn.functional as F
    import torchvision
except ImportError as e:  # the C++ test turns this into a failure with a setup hint
    print(f"cannot import torch/torchvision in {sys.executable}: {e}; "
          "run scripts/setup.sh --with-python", file=sys.stderr)
    sys.exit(3)

ARCHS = ("resnet18", "resnet50")
INPUT_SHAPE = (2, 3, 64, 64)  # small, to keep the test fast; the model is resolution-agnostic
LABELS = (3, 7)


def build(arch):
    return getattr(torchvision.models, arch)(weights=None)


def max_relative_error(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def write_references(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for index, arch in enumerate(ARCHS):
        torch.manual_seed(index)
        model = build(arch)
        model.train()
        with torch.no_grad():
            for _ in range(2):
                model(torch.randn(4, *INPUT_SHAPE[1:]))
        torch.save(model.state_dict(), os.path.join(out_dir, f"{arch}_state.pt"))

        x = torch.randn(*INPUT_SHAPE)
        labels = torch.tensor(LABELS, dtype=torch.int64)
        model.eval()
        with torch.no_grad():
            eval_logits = model(x)
        model.train()
        train_logits = model(x)
        loss = F.cross_entropy(train_logits, labels)
        loss.backward()

        torch.save({"input": x, "labels": labels, "eval_logits": eval_logits,
                    "train_logits": train_logits.detach(), "loss": loss.detach()},
                   os.path.join(out_dir, f"{arch}_io.pt"))
        torch.save({name: b for name, b in model.named_buffers()},
                   os.path.join(out_dir, f"{arch}_buffers.pt"))
        torch.save({name: p.grad for name, p in model.named_parameters()},
                   os.path.join(out_dir, f"{arch}_grads.pt"))
        print(f"{arch}: {len(model.state_dict())} state_dict entries, loss {loss.item():.6f}")


def check_export(arch, state_path, io_path):
    state = torch.load(state_path)
    model = build(arch)
    expected_keys = list(model.state_dict().keys())
    model.load_state_dict(state, strict=True)  # raises on any missing/unexpected/mis-shaped key
    if list(state.keys()) != expected_keys:
        print(f"key order differs from torchvision's: {list(state.keys())[:5]}...", file=sys.stderr)
        return 1
    io = torch.load(io_path)
    model.eval()
    with torch.no_grad():
        logits = model(io["input"])
    error = max_relative_error(logits, io["logits"])
    if not error < 1e-4:
        print(f"torchvision {arch} logits differ from batchlab's: relative error {error:.3e}",
              file=sys.stderr)
        return 1
    print(f"OK {arch}: {len(expected_keys)} keys in torchvision order, "
          f"logits relative error {error:.3e}")
    return 0


def main(argv):
    torch.set_num_threads(1)
    if len(argv) == 2 and not argv[1].startswith("-"):
        write_references(argv[1])
        return 0
    if len(argv) == 5 and argv[1] == "--check-export":
        return check_export(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
