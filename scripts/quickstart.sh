#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the quickstart sweep
# (sweeps/specs/quickstart.toml: Fashion-MNIST, batch 128..8192 x SGD/LARS/LAMB, 12 jobs of 1
# thread each; `sweep run` picks as many workers as there are cores and says so), ending with its
# table per optimizer and batch size. Running it again prints the table without rerunning anything;
# `rm -r results/quickstart.db runs/quickstart` starts over. setup.sh also installs what the
# README's next commands need (python3-matplotlib for `batchlab plot`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh batchlab
./build/batchlab sweep run sweeps/specs/quickstart.toml
