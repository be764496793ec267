#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the quickstart sweep
# (sweeps/specs/quickstart.toml: Fashion-MNIST, batch 128..8192 x SGD/LARS/LAMB, 12 jobs on 2
# workers), ending with its table per optimizer and batch size. Running it again prints the table
# without rerunning anything; `rm -r results/quickstart.db runs/quickstart` starts over.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh batchlab
./build/batchlab sweep run sweeps/specs/quickstart.toml --workers 2
