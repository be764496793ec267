#!/usr/bin/env python3
"""Python PyTorch peer of bench/model_throughput_bench.cpp: the same two networks, the same
inputs and the same measurement, so the C++ path can be compared with Python on one machine.

  resnet50   torchvision.models.resnet50(), 3x128x128 images, batch 32, 1000 classes,
             cross-entropy
  bert_base  BERT-Base written below in plain torch with the structure of models/bert.h
             (separate query/key/value projections, explicit softmax(Q K^T / sqrt(d)) V, post-LN,
             exact GELU, dropout 0.1, MLM head with the decoder tied to the token embedding),
             sequences of 128 tokens, batch 8, MLM cross-entropy at 154 of the 1024 positions

One step = gradients set to None, forward, loss, backward; no optimizer. Each repetition times
--steps steps after --warmup untimed steps per model. Run both side by side, same threads, on an
otherwise idle machine (each line one command; the virtualenv's torch is the LibTorch batchlab links):

  ./build/bench/model_throughput_bench --threads=2 --benchmark_repetitions=5
  .venv/bin/python bench/model_throughput.py --threads 2 --repetitions 5

Both print, per model,
  MODEL fwd+bwd: median X samples/s, min .., max .., spread S% (R repetitions, T threads);
  process CPU C s/step
with spread = (max - min) / median over the repetitions and C the median process CPU time per
step (all threads), which stays comparable when other work shares the machine. Always
.venv/bin/python (the python3 on PATH may be another interpreter without torch).
"""
import argparse
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

RESNET_BATCH, RESNET_SIDE, RESNET_CLASSES = 32, 128, 1000
BERT_BATCH, BERT_SEQ, BERT_VOCAB = 8, 128, 30522
BERT_LAYERS, BERT_HIDDEN, BERT_HEADS, BERT_POSITIONS = 12, 768, 12, 512
MLM_FRACTION = 0.15


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.attention_dense = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, 4 * hidden)
        self.output = nn.Linear(4 * hidden, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):  # [B, T, H]
        b, t, h = x.shape
        d = h // self.heads

        def split(y):  # [B, T, H] -> [B, heads, T, d]
            return y.view(b, t, self.heads, d).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q * (1.0 / math.sqrt(d)), k.transpose(-2, -1))  # [B, heads, T, T]
        probs = F.dropout(torch.softmax(scores, -1), self.dropout, self.training)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, h)
        branch = F.dropout(self.attention_dense(context), self.dropout, self.training)
        x = self.attention_norm(x + branch)
        branch = F.dropout(self.output(F.gelu(self.intermediate(x))), self.dropout, self.training)
        return self.output_norm(x + branch)


class BertForMlm(nn.Module):
    def __init__(self, vocab, positions, layers, hidden, heads, dropout=0.1):
        super().__init__()
        self.dropout = dropout
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.segment = nn.Embedding(2, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, dropout) for _ in range(layers))
        self.transform = nn.Linear(hidden, hidden)
        self.transform_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.decoder_bias = nn.Parameter(torch.zeros(vocab))
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids, segments, positions):  # ids, segments [B, T]; positions [N] flat
        t = ids.shape[1]
        x = self.word(ids) + self.position.weight[:t] + self.segment(segments)
        x = F.dropout(self.embedding_norm(x), self.dropout, self.training)
        for layer in self.layers:
            x = layer(x)
        x = x.reshape(-1, x.shape[-1]).index_select(0, positions)  # [N, H]
        x = self.transform_norm(F.gelu(self.transform(x)))
        return F.linear(x, self.word.weight, self.decoder_bias)  # [N, vocab], tied decoder


def resnet_case():
    import torchvision  # the virtualenv's, pinned with torch

    torch.manual_seed(0)
    net = torchvision.models.resnet50(num_classes=RESNET_CLASSES).train()
    images = torch.randn(RESNET_BATCH, 3, RESNET_SIDE, RESNET_SIDE)
    labels = torch.randint(0, RESNET_CLASSES, (RESNET_BATCH,))

    def step():
        net.zero_grad(set_to_none=True)
        F.cross_entropy(net(images), labels).backward()

    return step


def bert_case():
    torch.manual_seed(0)
    net = BertForMlm(BERT_VOCAB, BERT_POSITIONS, BERT_LAYERS, BERT_HIDDEN, BERT_HEADS).train()
    ids = torch.randint(0, BERT_VOCAB, (BERT_BATCH, BERT_SEQ))
    segments = torch.zeros(BERT_BATCH, BERT_SEQ, dtype=torch.long)
    segments[:, BERT_SEQ // 2:] = 1
    tokens = BERT_BATCH * BERT_SEQ
    n = int(MLM_FRACTION * tokens + 0.5)
    positions = torch.randperm(tokens)[:n].sort().values
    targets = torch.randint(0, BERT_VOCAB, (n,))

    def step():
        net.zero_grad(set_to_none=True)
        F.cross_entropy(net(ids, segments, positions), targets).backward()

    return step


def measure(label, make_step, batch, args):
    step = make_step()
    for _ in range(args.warmup):
        step()
    rates, cpu = [], []
    for _ in range(args.repetitions):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            step()
        rates.append(batch * args.steps / (time.perf_counter() - start))
        cpu.append((time.process_time() - start_cpu) / args.steps)
        print(f"  {label}: {rates[-1]:.2f} samples/s, process CPU {cpu[-1]:.2f} s/step", flush=True)
    median = statistics.median(rates)
    return (f"{label} fwd+bwd: median {median:.2f} samples/s, min {min(rates):.2f}, "
            f"max {max(rates):.2f}, spread {100.0 * (max(rates) - min(rates)) / median:.1f}% "
            f"({len(rates)} repetitions, {torch.get_num_threads()} threads); "
            f"process CPU {statistics.median(cpu):.2f} s/step")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1, help="timed steps per repetition")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per model")
    parser.add_argument("--models", default="resnet50,bert_base")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, intra-op threads: {torch.get_num_threads()}")
    cases = {"resnet50": ("resnet50 3x128x128 batch 32", resnet_case, RESNET_BATCH),
             "bert_base": ("bert_base seq 128 batch 8", bert_case, BERT_BATCH)}
    lines = []
    for name in args.models.split(","):
        if name not in cases:
            parser.error(f"--models: unknown {name!r}; valid: {', '.join(cases)}")
        label, make_step, batch = cases[name]
        lines.append(measure(label, make_step, batch, args))
    print()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
