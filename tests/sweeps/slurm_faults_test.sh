#!/usr/bin/env bash
# CTest `sweeps_slurm_faults` (label `slurm`): what a real site's sbatch does to a study, on the
# one-host Slurm cluster (scripts/slurm_local.sh), through an sbatch wrapper first on PATH that
# passes every call to the real sbatch but behaves as sites do:
#   - it prints a site banner on stderr (`sbatch: INFO: account demo`) on every call: job ids and
#     scheduler_job must stay `digits` / `digits_0`;
#   - the first submission fails once ("Socket timed out"): retried with backoff, nothing lost;
#   - after 3 submissions it refuses for good, as MaxSubmitJobs does: the coordinator stops, exit 1,
#     with sbatch's message, its database published, no trial failed; once the limit is lifted a
#     second `sweep submit` resumes the study to the end, every trial run once.
# Exit 77 (CTest: skipped) when Slurm cannot be installed or started here.
# Usage: slurm_faults_test.sh BATCHLAB_BINARY
set -euo pipefail

batchlab=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/sweeps/slurm_test_lib.sh
source "$root/tests/sweeps/slurm_test_lib.sh"
need_slurm "the one-host Slurm daemons need root"

work=$(mktemp -d /tmp/batchlab-slurmfaults-XXXXXX)
cluster="$work/cluster"
name=slurmfaults
cleanup() {
  if [[ -n "${SLURM_CONF:-}" ]]; then
    scancel --name="batchlab-$name,batchlab-$name-coordinator" >/dev/null 2>&1 || true
  fi
  bash "$root/scripts/slurm_local.sh" stop "$cluster" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/runs/$name/slurm/coordinator-*.out; do
    [[ -f "$f" ]] && { echo "== $f"; tail -n 20 "$f"; }
  done
  exit 1
}

mkdir -p "$work/bin" "$work/fake" "$work/ctl"
cp "$batchlab" "$work/bin/batchlab"
bl="$work/bin/batchlab"
q() { "$bl" query --db "$1" --format csv "$2" | tail -n +2; }

# The wrapper: the real sbatch behind a site's banner, a time-out once, and a submit limit.
real_sbatch=$(command -v sbatch)
cat > "$work/fake/sbatch" <<SH
#!/bin/bash
echo 'sbatch: INFO: account demo' >&2
if [[ "\$1" != --test-only ]]; then
  if [[ -e "$work/ctl/fail_once" ]]; then
    rm -f "$work/ctl/fail_once"
    echo 'sbatch: error: Batch job submission failed: Socket timed out on send/recv operation' >&2
    exit 1
  fi
  if [[ -e "$work/ctl/limit" ]]; then
    n=\$(cat "$work/ctl/count" 2>/dev/null || echo 0)
    if (( n >= \$(cat "$work/ctl/limit") )); then
      echo 'sbatch: error: QOSMaxSubmitJobPerUserLimit' >&2
      echo "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)" >&2
      exit 1
    fi
    echo \$((n + 1)) > "$work/ctl/count"
  fi
fi
exec "$real_sbatch" "\$@"
SH
chmod +x "$work/fake/sbatch"
export PATH="$work/fake:$PATH"
export BATCHLAB_SLURM_RETRY_MS=200  # the backoff's first wait (1 s at a site), inherited by jobs

tiny_base 1 > "$work/base.toml"
cat > "$work/spec.toml" <<TOML
schema_version = 1
[sweep]
name = "$name"
experiment = "base.toml"
results = "results/$name.db"
[set]
"data.val_size" = 128
"data.test_size" = 128
"optim.name" = "adam"
"optim.base_lr" = 0.001
[grid]
"batch.global" = [32]
[study]
target = { metric = "val_acc", value = 0.25 }
max_steps = 128
evals_per_octave = 2
warmup = 0.99
TOML

export SLURM_LOCAL_PORT=$((20000 + RANDOM % 20000))
bash "$root/scripts/slurm_local.sh" start "$cluster" || fail "the one-host Slurm cluster did not start"
export SLURM_CONF="$cluster/slurm.conf"
cd "$work"
submit=("$bl" sweep submit spec.toml --slurm --partition debug --max-parallel 1 --snapshot-every 1
        --publish-every 2)
db="$work/results/$name.db"
wait_queue() {
  local deadline=$((SECONDS + $1))
  while [[ -n "$(squeue -h)" ]]; do
    (( SECONDS < deadline )) || fail "$2"
    sleep 1
  done
}

# 1. The coordinator's own submission times out once, then goes through; the limit lets 3
#    submissions through (the coordinator and two trials), then refuses.
touch ctl/fail_once
echo 3 > ctl/limit
"${submit[@]}" > submit1.log 2>&1 || fail "the first submission failed: $(cat submit1.log)"
grep -q "submitted its coordinator as Slurm job [0-9]* " submit1.log ||
  fail "the job id is not digits: $(cat submit1.log)"
[[ ! -e ctl/fail_once ]] || fail "the wrapper's time-out was never hit"
first=$(tail -n 1 runs/$name/slurm/coordinator.txt)
[[ "$first" =~ ^[0-9]+$ ]] || fail "coordinator.txt holds '$first', not a job id"
wait_queue 180 "the limited coordinator did not stop within 3 minutes"
out="runs/$name/slurm/coordinator-$first.out"
grep -q "submit limit" "$out" || fail "the coordinator did not stop on the submit limit: $(tail -n 5 "$out")"
grep -q "QOSMaxSubmitJobPerUserLimit" "$out" || fail "sbatch's message is not passed on"
grep -q "nothing lost" "$out" || fail "the coordinator does not say that nothing is lost"
[[ "$(q "$db" "PRAGMA integrity_check")" == ok ]] || fail "the published database is not intact"
[[ "$(q "$db" "SELECT count(*) FROM runs WHERE status = 'failed'")" == 0 ]] ||
  fail "a trial was recorded failed: $(q "$db" "SELECT run_id, error FROM runs WHERE status = 'failed'")"
ran=$(q "$db" "SELECT count(*) FROM runs WHERE attempts >= 1")
[[ "$ran" == 2 ]] || fail "expected the 2 trials the limit let through, got $ran"
echo "limited: coordinator $first stopped on the submit limit after $ran trials"

# 2. The limit lifted, a second submission resumes the study to its end, every trial run once.
rm -f ctl/limit
"${submit[@]}" > submit2.log 2>&1 || fail "the second submission failed: $(cat submit2.log)"
wait_queue 240 "the resumed study did not finish within 4 minutes"
[[ "$(q "$db" "SELECT count(*) FROM study_cells WHERE status = 'reached'")" == 1 ]] ||
  fail "the cell did not reach: $(q "$db" "SELECT cell_id, status FROM study_cells")"
[[ "$(q "$db" "SELECT count(*) FROM study_trials WHERE outcome = 'running'")" == 0 ]] ||
  fail "trials left running"
again=$(q "$db" "SELECT count(*) FROM runs WHERE attempts != 1")
[[ "$again" == 0 ]] || fail "$again trials ran more than once (or never)"
bad_ids=$(q "$db" "SELECT count(*) FROM runs WHERE scheduler_job NOT GLOB '[0-9]*_0'")
[[ "$bad_ids" == 0 ]] || fail "scheduler_job is not digits_0: $(q "$db" "SELECT scheduler_job FROM runs")"
trials=$(q "$db" "SELECT count(*) FROM study_trials")
echo "PASS: a site banner, a time-out retried, a submit limit that stops the study with nothing lost, resumed to the end ($trials trials, each run once)"
