#!/usr/bin/env bash
# ctest gpu_studies_rehearsal: runs scripts/gpu/studies.sh --rehearse on the quickstart sweep for
# 15 seconds against the build directory given as $1 and checks what would come back from a GPU
# machine: the study's database (its stored spec carrying the device the copy set, its results
# path in the work folder), the run folders and the logs with one line per study; and that the
# tree is left as it was (no device copy of the spec left behind).
set -euo pipefail
build=${1:?usage: studies_rehearsal_test.sh BUILD_DIR}
out=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$out" "$work"' EXIT
OUT=$out WORK=$work BATCHLAB_BUILD_DIR=$build \
  bash scripts/gpu/studies.sh --rehearse --seconds 15 sweeps/specs/quickstart.toml
test -s "$out/quickstart.db"
test -s "$out/quickstart-runs.tar.gz"
spec=$(sqlite3 "$out/quickstart.db" "SELECT spec_toml FROM sweeps WHERE name = 'quickstart'")
grep -q '^"train.device" = "cpu"$' <<<"$spec" || { echo "stored spec lacks the device: $spec"; exit 1; }
grep -q "^results = \"$work/quickstart.db\"\$" <<<"$spec" || { echo "results not in WORK: $spec"; exit 1; }
tsv=$(tar -xzOf "$out/studies-logs.tar.gz" logs/studies.tsv)
[[ $tsv == quickstart$'\t'* ]] || { echo "studies.tsv: $tsv"; exit 1; }
test ! -e sweeps/specs/.gpu-quickstart.toml
echo "studies rehearsal: $tsv"
