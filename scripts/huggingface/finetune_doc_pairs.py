#!/usr/bin/env python3
"""Fine-tune a batchlab-pretrained BERT with Hugging Face transformers on a task made from the
Python documentation: which of two documents a 62-token passage came from. The same head is
fine-tuned on the same data from a randomly initialised encoder of the same shape, as the
baseline. Run by scripts/huggingface/finetune_example.sh (docs/huggingface.md has the numbers).

    finetune_doc_pairs.py MODEL_DIR DOC_A DOC_B [--epochs N] [--lr X] [--seed S] [--threads T]

Passages: each document's lines, encoded with MODEL_DIR's tokenizer (AutoTokenizer: the run's
own), concatenated and cut into 62-token windows ([CLS] window [SEP] = 64 tokens). The first 80%
of each document's windows train, the last 20% test (no passage is in both), and the larger
document is cut to the smaller one's count so chance is 50%.
"""
import argparse
import os
import random
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402

WINDOW = 62


def windows(tokenizer, path):
    ids = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                ids += tokenizer(line, add_special_tokens=False)["input_ids"]
    return [ids[i:i + WINDOW] for i in range(0, len(ids) - WINDOW + 1, WINDOW)]


def split(tokenizer, doc_a, doc_b):
    a, b = windows(tokenizer, doc_a), windows(tokenizer, doc_b)
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    cut = int(0.8 * n)
    train = [(w, 0) for w in a[:cut]] + [(w, 1) for w in b[:cut]]
    test = [(w, 0) for w in a[cut:]] + [(w, 1) for w in b[cut:]]
    return train, test


def batch(tokenizer, examples):
    ids = torch.tensor([[tokenizer.cls_token_id] + w + [tokenizer.sep_token_id]
                        for w, _ in examples])
    return ids, torch.tensor([label for _, label in examples])


def accuracy(model, tokenizer, examples):
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(examples), 64):
            ids, labels = batch(tokenizer, examples[i:i + 64])
            right += (model(input_ids=ids).logits.argmax(-1) == labels).sum().item()
    return right / len(examples)


def finetune(model, tokenizer, train, test, epochs, lr, seed):
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * ((len(train) + 31) // 32)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / steps)
    start = time.time()
    for _ in range(epochs):
        order = train[:]
        rng.shuffle(order)
        model.train()
        for i in range(0, len(order), 32):
            ids, labels = batch(tokenizer, order[i:i + 32])
            loss = model(input_ids=ids, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
    return accuracy(model, tokenizer, test), time.time() - start, steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model_dir")
    p.add_argument("doc_a")
    p.add_argument("doc_b")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    tokenizer = transformers.AutoTokenizer.from_pretrained(a.model_dir)
    train, test = split(tokenizer, a.doc_a, a.doc_b)
    print(f"task: {len(train)} training and {len(test)} test passages of {WINDOW} tokens "
          f"({os.path.basename(a.doc_a)} = 0, {os.path.basename(a.doc_b)} = 1)")
    for name in ("pretrained", "random"):
        torch.manual_seed(a.seed)
        if name == "pretrained":
            model = transformers.BertForSequenceClassification.from_pretrained(
                a.model_dir, num_labels=2)
        else:
            config = transformers.BertConfig.from_pretrained(a.model_dir, num_labels=2)
            model = transformers.BertForSequenceClassification(config)
        acc, seconds, steps = finetune(model, tokenizer, train, test, a.epochs, a.lr, a.seed)
        print(f"{name} encoder: test accuracy {acc:.3f} after {steps} steps "
              f"({a.epochs} epochs, AdamW lr {a.lr}, batch 32), {seconds:.0f} s")


if __name__ == "__main__":
    main()
