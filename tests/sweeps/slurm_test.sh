#!/usr/bin/env bash
# CTest `sweeps_slurm` (label `slurm`): `batchlab sweep submit --slurm` on a real, one-host Slurm
# cluster. Installs slurm-wlm and munge (scripts/slurm_setup.sh), starts munged, slurmctld and
# slurmd on this host (scripts/slurm_local.sh), submits a 4-job synthetic sweep as one job array,
# waits (at most 5 minutes) for the queue to drain, folds the records with `sweep status` and
# checks that every run is done in the sweep database with all its steps; then runs a one-job sweep
# as 2 data-parallel ranks (--ranks-per-job 2: srun, SLURM_PROCID rendezvous). The daemons are stopped
# however the test ends. Exit 77 (CTest: skipped) when Slurm cannot be installed or started here.
# Usage: slurm_test.sh BATCHLAB_BINARY
set -euo pipefail

batchlab=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/sweeps/slurm_test_lib.sh
source "$root/tests/sweeps/slurm_test_lib.sh"
need_slurm "the one-host Slurm daemons need root"

work=$(mktemp -d /tmp/batchlab-slurm-XXXXXX)
cluster="$work/cluster"
cleanup() {
  if [[ -n "${SLURM_CONF:-}" ]]; then scancel --name=batchlab-slurmtest >/dev/null 2>&1 || true; fi
  bash "$root/scripts/slurm_local.sh" stop "$cluster" || true
  rm -rf "$work"
}
trap cleanup EXIT

# A port of its own, so that a cluster another test run left behind cannot answer.
export SLURM_LOCAL_PORT=$((20000 + RANDOM % 20000))
if ! bash "$root/scripts/slurm_local.sh" start "$cluster"; then
  echo "FAIL: the one-host Slurm cluster did not start"
  exit 1
fi
export SLURM_CONF="$cluster/slurm.conf"

tiny_base 2 > "$work/base.toml"
cat > "$work/spec.toml" <<TOML
schema_version = 1
[sweep]
name = "slurmtest"
experiment = "base.toml"
results = "$work/results/slurmtest.db"
seeds = [0, 1]
[grid]
"batch.global" = [64, 128]
TOML

"$batchlab" sweep submit "$work/spec.toml" --slurm --partition debug --time 00:10:00 \
  --max-parallel 2
deadline=$((SECONDS + 300))
while [[ -n "$(squeue -h --name=batchlab-slurmtest 2>/dev/null)" ]]; do
  if (( SECONDS > deadline )); then
    echo "FAIL: the array did not finish within 5 minutes"
    squeue
    tail -n 20 "$cluster"/log/*.log
    exit 1
  fi
  sleep 2
done

status=$("$batchlab" sweep status "$work/spec.toml")
echo "$status"
db="$work/results/slurmtest.db"
done_runs=$("$batchlab" query --db "$db" --format csv \
  "SELECT count(*) AS n FROM runs WHERE sweep_id = 'slurmtest' AND status = 'done'" | tail -1)
complete=$("$batchlab" query --db "$db" --format csv \
  "SELECT count(*) AS n FROM runs r WHERE sweep_id = 'slurmtest' AND total_steps > 0 AND
     total_steps = (SELECT count(*) FROM steps s WHERE s.run_id = r.run_id)" | tail -1)
if [[ "$done_runs" != "4" || "$complete" != "4" ]]; then
  echo "FAIL: expected 4 done runs with all their steps, got done=$done_runs complete=$complete"
  for f in "$work"/runs/slurmtest/slurm/*.out "$work"/runs/slurmtest/*/log.txt; do
    echo "== $f"; tail -n 15 "$f" || true
  done
  exit 1
fi
# Everything is settled: a second submission has nothing to do.
again=$("$batchlab" sweep submit "$work/spec.toml" --slurm --partition debug)
if [[ "$again" != *"nothing to submit"* ]]; then
  echo "FAIL: a second submit should have nothing to submit: $again"
  exit 1
fi

# A job of 2 data-parallel ranks: srun starts them in the task's allocation, they meet through
# SLURM_PROCID/SLURM_NTASKS, and rank 0 keeps the records. A world the batch cannot be split over
# is refused before anything is submitted.
sed -e 's/name = "slurmtest"/name = "slurmranks"/' -e 's/slurmtest.db/slurmranks.db/' \
  -e 's/^seeds = .*/seeds = [0]/' -e 's/\[64, 128\]/[64]/' "$work/spec.toml" > "$work/ranks.toml"
set +e
refused=$("$batchlab" sweep submit "$work/ranks.toml" --slurm --partition debug --ranks-per-job 3 2>&1)
rc=$?
set -e
if [[ $rc -ne 2 || "$refused" != *"cannot be split over 3 ranks"* ]]; then
  echo "FAIL: 3 ranks for batch 64 = 2 x 32 should exit 2: $rc $refused"
  exit 1
fi
"$batchlab" sweep submit "$work/ranks.toml" --slurm --partition debug --time 00:10:00 \
  --ranks-per-job 2 --cpus-per-task 1
deadline=$((SECONDS + 300))
while [[ -n "$(squeue -h --name=batchlab-slurmranks 2>/dev/null)" ]]; do
  (( SECONDS < deadline )) || { echo "FAIL: the 2-rank job did not finish"; exit 1; }
  sleep 2
done
"$batchlab" sweep status "$work/ranks.toml" > /dev/null
ranks_db="$work/results/slurmranks.db"
world=$("$batchlab" query --db "$ranks_db" --format csv \
  "SELECT status || ' ' || world_size FROM runs WHERE sweep_id = 'slurmranks'" | tail -1)
if [[ "$world" != "done 2" ]]; then
  echo "FAIL: the 2-rank job should be done with world_size 2, got '$world'"
  tail -n 20 "$work"/runs/slurmranks/*/log.txt || true
  exit 1
fi
echo "PASS: 4 Slurm array tasks ran and every run is done in the sweep database; a 2-rank job ran through srun"
