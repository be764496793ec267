#!/usr/bin/env bash
# Makes the dashboard tests' database in DIR: runs tests/serve/fixture_sweep.toml (6 jobs on
# synthetic data, a few seconds on 2 cores) with the batchlab binary under test.
# Usage: make_fixture.sh BATCHLAB DIR
set -euo pipefail
bin=$1
dir=$2
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir"
mkdir -p "$dir"
cp "$src/fixture_experiment.toml" "$src/fixture_sweep.toml" "$dir/"
cd "$dir"
"$bin" sweep run fixture_sweep.toml --workers 2
