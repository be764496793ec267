#!/usr/bin/env python3
"""The unigram floor of a causal-LM run on a packed text corpus: what a model that predicts only
the pieces' frequencies scores, to compare a run's next-token loss against (and to place a study's
target past it, as the BERT study placed its MLM target past the MLM unigram plateau).

    .venv/bin/python scripts/studies/unigram_entropy.py SHARD_DIR

SHARD_DIR is a `batchlab data pack-text` output or a text cache entry ($BATCHLAB_CACHE_DIR or
~/.cache/batchlab, text/<key>/: index.txt and shard-*.bin, experiments/data/token_shards.h). The
stream and its split are experiments/data/mlm_token_stream.h's: every document's tokens followed by
[SEP] (id 3), the test split starting at the first document that begins at or after 98% of the
stream (the causal-LM task's split, experiments/tasks/causal_lm_task.h). Prints the entropy of the
training split's targets (every token but the first), in nats, and the cross-entropy on the test
split's targets of the unigram model fit on the training split (add-one smoothing).
"""
import math
import struct
import sys

import numpy as np

SEP = 3
HELD_OUT = 0.02


def read_stream(directory):
    index = open(f"{directory}/index.txt").read().split("\n")
    vocab = int(next(l.split()[1] for l in index if l.startswith("vocab_size ")))
    parts, doc_starts, position = [], [], 0
    for line in index:
        if not line.startswith("shard "):
            continue
        raw = open(f"{directory}/{line.split()[1]}", "rb").read()
        _, _, token_bytes, docs, tokens = struct.unpack_from("<8sIIQQ", raw, 0)
        offsets = np.frombuffer(raw, dtype="<u8", count=docs + 1, offset=64)
        ids = np.frombuffer(raw, dtype="<u2" if token_bytes == 2 else "<u4", count=tokens,
                            offset=64 + 8 * (docs + 1)).astype(np.int64)
        for d in range(docs):
            doc_starts.append(position)
            parts.append(ids[offsets[d]:offsets[d + 1]])
            parts.append(np.array([SEP]))
            position += int(offsets[d + 1] - offsets[d]) + 1
    return np.concatenate(parts), doc_starts, vocab


def split_point(total, doc_starts):
    target = math.floor((1.0 - HELD_OUT) * total)
    for start in doc_starts[1:]:
        if start >= target:
            return start if 2 * (total - start) >= total - target else target
    return target


def main(directory):
    stream, doc_starts, vocab = read_stream(directory)
    boundary = split_point(len(stream), doc_starts)
    train, test = stream[:boundary], stream[boundary:]
    counts = np.bincount(train[1:], minlength=vocab).astype(np.float64)
    p = counts / counts.sum()
    entropy = -(p[p > 0] * np.log(p[p > 0])).sum()
    smoothed = (counts + 1) / (counts.sum() + vocab)
    test_ce = -np.log(smoothed[test[1:]]).mean()
    print(f"{directory}: stream {len(stream)} tokens (training split {len(train)}, test {len(test)}), "
          f"vocabulary {vocab}")
    print(f"unigram entropy of the training targets: {entropy:.4f} nats")
    print(f"unigram model (fit on the training split) on the test targets: {test_ce:.4f} nats")
    print(f"most frequent piece: {p.max():.4f} of the training targets")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
