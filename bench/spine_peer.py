#!/usr/bin/env python3
"""The spine experiment as a plain PyTorch training loop: batchlab's Python peer for time to 88%.

Trains exactly what experiments/configs/fashion_mnist.toml describes (read from that file, so the
two cannot drift; a key this script does not implement is refused), with the project
virtualenv's Python and torch (.venv/bin/python: the same LibTorch build batchlab links;
`bash scripts/setup.sh` makes it):

  model     models/small_resnet.*: conv1 3x3 (1 -> w/2, no bias) + BN + ReLU, layer1 = 2 BasicBlocks
            of w channels (the first stride 2), layer2 = 2 BasicBlocks of 2w (the first stride 2),
            global average pool, fc; convolutions He-normal (fan_out, ReLU), BN scale 1 shift 0,
            fc at PyTorch's default; BN momentum 0.1, eps 1e-5 (GhostBatchNorm2d with group 0).
  data      the four IDX files of dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), the
            whole 60,000 / 10,000 split, uint8 -> /255 -> minus the training set's mean, divided by
            its standard deviation (experiments/data/image_dataset.cpp compute_channel_stats), no
            augmentation, batches built on the training thread (data.workers = 0).
  order     batchlab's own: epoch e visits randperm(60000) drawn from a CPU generator seeded with
            mix_seed(data seed, e) (core/train/data_order.cpp), global batches are contiguous
            slices, the incomplete last batch is dropped (468 steps per epoch at batch 128).
  optimizer torch.optim.SGD, momentum 0.9, dampening 0, weight decay 5e-4 on parameters with >= 2
            dimensions and 0 on the rest (optim.exclude = ["ndim<2"]), LR = base_lr x global /
            base_batch (linear scaling), set before every step from the step index: linear warmup
            from 0 over round(0.25 x 468) steps, then cosine to 0 at step round(3 x 468).
  threads   train.threads (0: every core, as `batchlab train`): torch.set_num_threads.
  eval      every train.eval_every epochs (and after the last step): test accuracy in eval mode,
            off the training clock. (batchlab also measures a fixed training sample there; that
            does not touch the training clock either, so it is left out.)

The training clock counts what batchlab's does: building the batch, forward, backward and the
update, step by step with time.perf_counter (CPU ops are synchronous). Evaluation is excluded.

Output: progress on stderr, then ONE line on stdout, a JSON object:
  {"time_to_target_s": 47.3, "target_metric": "test_acc", "target": 0.88, "reached_step": 936,
   "train_s": 71.2, "test_acc": 0.9161, "steps": 1404, "threads": 2}
time_to_target_s is the training clock at the first evaluation whose test accuracy reaches the
config's train.target (null when never reached), as batchlab's milestones table records it.

Back to back with batchlab on one otherwise idle machine (same cores, same LibTorch):

  rm -f /tmp/spine.db*   # a fresh database: the same config has the same run id
  build/batchlab train experiments/configs/fashion_mnist.toml --db /tmp/spine.db
  build/batchlab query --db /tmp/spine.db "SELECT metric, target, step, wall_s FROM milestones"
  .venv/bin/python bench/spine_peer.py experiments/configs/fashion_mnist.toml

The milestones row's wall_s (training clock, evaluation excluded) is batchlab's time to 88%, the
peer's time_to_target_s is its own; the ratio batchlab / peer is what docs/performance.md reports. Run each a second time in the other
order to see the noise. `--max-steps N` stops after N steps (the schedule stays the full run's) to
check that the script works without a long run.
"""

import argparse
import gzip
import json
import math
import os
import sys
import time
import tomllib

import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
MASK64 = (1 << 64) - 1

# What the peer implements, per section: key -> batchlab's default when the file leaves it out.
# A key outside this table (or a different value where only one is supported) is refused, so the
# peer never silently trains something other than the config.
SUPPORTED = {
    "model": {"arch": "small_resnet", "width": 32, "zero_init_residual": False},
    "data": {"dataset": "fashion_mnist", "path": "", "eval_train_samples": 10000, "seed": None,
             "augment": False, "train_size": 0, "test_size": 0, "workers": 0, "val_size": 0},
    "batch": {"global": None, "micro": 0, "bn_group": 0},
    "optim": {"name": "sgd", "base_lr": 0.1, "base_batch": 256, "scaling": "none",
              "momentum": 0.9, "nesterov": False, "weight_decay": 0.0, "grad_clip": 0.0,
              "exclude": ["ndim<2"]},
    "schedule": {"warmup_epochs": 0.0, "warmup_start": 0.0, "decay": "constant", "end_lr": 0.0,
                 "epochs": None},
    "train": {"seed": 0, "threads": 0, "eval_every": 1.0, "log_every": 1, "target": None,
              "precision": "fp32", "device": "cpu", "stop_at_target": False},
}
ONLY = {("model", "arch"): "small_resnet", ("data", "dataset"): "fashion_mnist",
        ("data", "augment"): False, ("data", "train_size"): 0, ("data", "test_size"): 0,
        ("data", "workers"): 0, ("data", "val_size"): 0, ("batch", "bn_group"): 0,
        ("optim", "name"): "sgd", ("optim", "nesterov"): False, ("optim", "grad_clip"): 0.0,
        ("optim", "exclude"): ["ndim<2"], ("train", "precision"): "fp32",
        ("train", "device"): "cpu", ("model", "zero_init_residual"): False}


def read_config(path):
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    cfg = {}
    for section, keys in SUPPORTED.items():
        given = doc.get(section, {})
        for key in given:
            if key not in keys:
                sys.exit(f"{path}: {section}.{key}: not implemented by this peer; remove it or "
                         f"extend bench/spine_peer.py")
        cfg[section] = {k: given.get(k, default) for k, default in keys.items()}
    for section in doc:
        if section not in SUPPORTED and section != "schema_version":
            sys.exit(f"{path}: [{section}]: not implemented by this peer")
    for (section, key), value in ONLY.items():
        if cfg[section][key] != value:
            sys.exit(f"{path}: {section}.{key} = {cfg[section][key]!r}: the peer supports only "
                     f"{value!r}")
    if cfg["schedule"]["decay"] not in ("constant", "cosine"):
        sys.exit(f"{path}: schedule.decay: the peer supports constant and cosine")
    if cfg["batch"]["micro"] not in (0, cfg["batch"]["global"]):
        sys.exit(f"{path}: batch.micro: the peer does not accumulate micro-batches")
    if cfg["data"]["seed"] is None:
        cfg["data"]["seed"] = cfg["train"]["seed"]
    return cfg


# ---- data (experiments/data/fashion_mnist.cpp, idx_reader.cpp, image_dataset.cpp) ----

def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=torch.uint8)
    return data.reshape(dims)


def load_fashion_mnist(directory):
    def find(name):
        for candidate in (name, name[:-3]):
            path = os.path.join(directory, candidate)
            if os.path.exists(path):
                return path
        sys.exit(f"{os.path.join(directory, name)} not found: install dataset-fashion-mnist")
    train_x = read_idx(find("train-images-idx3-ubyte.gz")).unsqueeze(1)  # uint8 [60000, 1, 28, 28]
    train_y = read_idx(find("train-labels-idx1-ubyte.gz")).long()        # int64 [60000]
    test_x = read_idx(find("t10k-images-idx3-ubyte.gz")).unsqueeze(1)    # uint8 [10000, 1, 28, 28]
    test_y = read_idx(find("t10k-labels-idx1-ubyte.gz")).long()          # int64 [10000]
    # Population mean and standard deviation of the training pixels in [0, 1] units, from exact
    # integer sums as compute_channel_stats takes them (in chunks: a float copy would be 376 MB).
    total, total_sq = 0, 0
    for chunk in train_x.split(10000):
        wide = chunk.long()
        total += wide.sum().item()
        total_sq += (wide * wide).sum().item()
    count = train_x.numel()
    m = total / count
    mean = m / 255.0
    std = math.sqrt(max(total_sq / count - m * m, 0.0)) / 255.0
    return train_x, train_y, test_x, test_y, mean, std


def make_batch(images, labels, idx, mean, std):
    x = images.index_select(0, idx).float().div_(255.0).sub_(mean).div_(std)  # [n, 1, 28, 28]
    return x, labels.index_select(0, idx)


# ---- data order (core/train/data_order.cpp) ----

def mix_seed(a, b):
    z = (a * 0x9E3779B97F4A7C15 + b + 0x632BE59BD9B4E019) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def epoch_permutation(data_seed, epoch, n):
    gen = torch.Generator().manual_seed(mix_seed(data_seed & MASK64, epoch))
    return torch.randperm(n, generator=gen, dtype=torch.int64)


# ---- model (models/small_resnet.cpp, basic_block.cpp) ----

def conv3x3(cin, cout, stride):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = conv3x3(cout, cout, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        out += x if self.downsample is None else self.downsample(x)
        return F.relu(out, inplace=True)


class SmallResNet(nn.Module):
    def __init__(self, width, blocks=(2, 2), in_channels=1, num_classes=10):
        super().__init__()
        stem = width // 2
        self.conv1 = nn.Conv2d(in_channels, stem, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem)
        cin = stem
        for s, count in enumerate(blocks):
            cout = width << s
            stage = nn.Sequential(*[BasicBlock(cin if b == 0 else cout, cout, 2 if b == 0 else 1)
                                    for b in range(count)])
            setattr(self, f"layer{s + 1}", stage)
            cin = cout
        self.stages = len(blocks)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():  # torchvision's initialization, as init_resnet_weights
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):                                 # [B, 1, 28, 28]
        x = F.relu(self.bn1(self.conv1(x)), inplace=True)  # [B, w/2, 28, 28]
        for s in range(self.stages):
            x = getattr(self, f"layer{s + 1}")(x)         # [B, w*2^s, 28/2^(s+1), ...]
        return self.fc(x.mean((2, 3)))                    # [B, 10]


# ---- schedule (core/optim/lr_schedule.cpp) ----

def lr_at(step, peak, warmup, total, sched):
    x = float(min(max(step, 0), total))
    if x < warmup:
        start = sched["warmup_start"]
        return peak * (start + (1.0 - start) * x / warmup)
    if sched["decay"] == "constant":
        return peak
    p = min(max((x - warmup) / (total - warmup), 0.0), 1.0) if total > warmup else 1.0
    end = sched["end_lr"]
    return end + (peak - end) * 0.5 * (1.0 + math.cos(math.pi * p))


def peak_lr(optim, global_batch):
    k = global_batch / optim["base_batch"]
    scale = {"none": 1.0, "linear": k, "sqrt": math.sqrt(k)}[optim["scaling"]]
    return optim["base_lr"] * scale


@torch.no_grad()
def test_accuracy(model, images, labels, mean, std, chunk=1000):
    model.eval()
    correct = 0
    for start in range(0, images.size(0), chunk):
        idx = torch.arange(start, min(start + chunk, images.size(0)))
        x, y = make_batch(images, labels, idx, mean, std)
        correct += model(x).argmax(1).eq(y).sum().item()
    model.train()
    return correct / images.size(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", nargs="?", default="experiments/configs/fashion_mnist.toml")
    parser.add_argument("--max-steps", type=int, default=0,
                        help="stop after this many steps (0: the whole run); for checking only")
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads (default: the config's train.threads)")
    args = parser.parse_args()

    cfg = read_config(args.config)
    model_cfg, data_cfg, batch_cfg = cfg["model"], cfg["data"], cfg["batch"]
    optim_cfg, sched_cfg, train_cfg = cfg["optim"], cfg["schedule"], cfg["train"]
    threads = args.threads if args.threads is not None else train_cfg["threads"]
    torch.set_num_threads(threads if threads > 0 else (os.cpu_count() or 1))

    train_x, train_y, test_x, test_y, mean, std = load_fashion_mnist(
        data_cfg["path"] or DEFAULT_DATA_DIR)
    global_batch = batch_cfg["global"]
    steps_per_epoch = train_x.size(0) // global_batch
    total = round(sched_cfg["epochs"] * steps_per_epoch)
    warmup = round(sched_cfg["warmup_epochs"] * steps_per_epoch)
    eval_every = max(1, round(train_cfg["eval_every"] * steps_per_epoch))
    peak = peak_lr(optim_cfg, global_batch)
    target = train_cfg["target"]
    if isinstance(target, list):
        target = target[0] if target else None
    if target is not None and target["metric"] != "test_acc":
        sys.exit(f"{args.config}: train.target.metric: the peer measures test_acc only")

    torch.manual_seed(train_cfg["seed"])
    model = SmallResNet(model_cfg["width"])
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.SGD(
        [{"params": decay, "weight_decay": optim_cfg["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=peak, momentum=optim_cfg["momentum"], dampening=0.0, nesterov=False)
    model.train()

    last = min(total, args.max_steps) if args.max_steps > 0 else total
    print(f"spine_peer: {total} steps ({steps_per_epoch}/epoch, warmup {warmup}), batch "
          f"{global_batch}, peak lr {peak:g}, {torch.get_num_threads()} threads, torch "
          f"{torch.__version__}", file=sys.stderr)
    train_s = 0.0
    reached = None
    acc = None
    permutation = None
    log_every = max(1, train_cfg["log_every"])
    for step in range(last):
        t0 = time.perf_counter()
        epoch, in_epoch = divmod(step, steps_per_epoch)
        if in_epoch == 0:
            permutation = epoch_permutation(data_cfg["seed"], epoch, train_x.size(0))
        idx = permutation[in_epoch * global_batch:(in_epoch + 1) * global_batch]
        x, y = make_batch(train_x, train_y, idx, mean, std)
        lr = lr_at(step, peak, warmup, total, sched_cfg)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        loss_value = loss.item() if (step + 1) % log_every == 0 else None
        train_s += time.perf_counter() - t0

        done = step + 1
        if loss_value is not None and done % (log_every * 10) == 0:
            print(f"  step {done} loss {loss_value:.4f} train_s {train_s:.1f}", file=sys.stderr)
        if done % eval_every == 0 or done == last:
            acc = test_accuracy(model, test_x, test_y, mean, std)
            print(f"  eval step {done} epoch {done / steps_per_epoch:.2f} test_acc {acc:.4f} "
                  f"train_s {train_s:.1f}", file=sys.stderr)
            if target is not None and reached is None and acc >= target["value"]:
                reached = (train_s, done)

    print(json.dumps({
        "time_to_target_s": round(reached[0], 3) if reached else None,
        "target_metric": target["metric"] if target else None,
        "target": target["value"] if target else None,
        "reached_step": reached[1] if reached else None,
        "train_s": round(train_s, 3),
        "test_acc": acc,
        "steps": last,
        "threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
