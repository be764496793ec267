#!/usr/bin/env bash
# The measured example of docs/huggingface.md: pretrain bert_tiny with LAMB on Debian's Python
# documentation with batchlab, export it as a Hugging Face folder, and fine-tune a classification
# head with transformers (scripts/huggingface/finetune_doc_pairs.py), against the same head on a
# randomly initialised encoder. One thread; a few minutes on the project's 2-core machine.
#   bash scripts/huggingface/finetune_example.sh [WORK_DIR]   (default /tmp/batchlab-hf-example)
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/batchlab-hf-example}
mkdir -p "$work"
docs=/usr/share/doc/python3.11/html/_sources
config=experiments/configs/bert_tiny_text.toml
build/batchlab train "$config" --db "$work/pretrain.db" \
  --set model.vocab_size=2048 --set optim.name=lamb --set optim.base_lr=0.005 \
  --set optim.weight_decay=0.01 --set schedule.steps=300 --set train.checkpoint_every=300 \
  --set train.threads=1
run=$(build/batchlab query --db "$work/pretrain.db" --format csv "SELECT run_id FROM runs" | tail -1)
rm -rf "$work/bert_tiny_hf"
build/batchlab export --db "$work/pretrain.db" --run "$run" \
  --format hf --out "$work/bert_tiny_hf"
.venv/bin/python scripts/huggingface/finetune_doc_pairs.py "$work/bert_tiny_hf" \
  "$docs/library/stdtypes.rst.txt" "$docs/library/os.rst.txt" --threads 1
