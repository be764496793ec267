#!/usr/bin/env bash
# Runs the libFuzzer harnesses of a -DBATCHLAB_FUZZ=ON build (docs/fuzzing.md), one at a time, at
# the lowest priority, each for SECONDS, and prints libFuzzer's final figures per harness.
# Usage: scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]   (default: every fuzz_* in BUILD_DIR/fuzz)
# New inputs go to BUILD_DIR/fuzz/corpus/<harness>/, crashes to BUILD_DIR/fuzz/findings/<harness>/;
# logs to BUILD_DIR/fuzz/logs/<harness>.log. The committed seeds (fuzz/corpus/) are only read.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]}
seconds=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]}
shift 2
if [[ $# -gt 0 ]]; then
  harnesses=("$@")
else
  mapfile -t harnesses < <(cd "$build/fuzz" && ls fuzz_* | sed 's/^fuzz_//')
fi
for h in "${harnesses[@]}"; do
  exe="$build/fuzz/fuzz_$h"
  [[ -x $exe ]] || { echo "fuzz: $exe is missing (build it with -DBATCHLAB_FUZZ=ON)" >&2; exit 2; }
  mkdir -p "$build/fuzz/corpus/$h" "$build/fuzz/findings/$h" "$build/fuzz/logs"
  log="$build/fuzz/logs/$h.log"
  echo "fuzz: $h for ${seconds}s (log $log)"
  # -rss_limit_mb: a parser that needs more than 2 GB for one input is a finding (an OOM);
  # -timeout: so is one that takes more than 60 s. libFuzzer's timer counts wall time, and at nice
  # 19 on a busy machine an input can wait many seconds for a core (a JPEG that takes 0.2 s of CPU
  # was reported after 13 s at a load of 15), so the bound is loose; check a reported time-out's
  # CPU time (/usr/bin/time) before calling it a hang. -max_len: libFuzzer would start at the largest
  # seed (a few hundred bytes) and grow slowly; nesting and tables need room.
  # A records database (ingest) is at least about 20 KB even at SQLite's smallest page size: one
  # page per table and index, and the schema's text.
  max_len=16384
  [[ $h == ingest ]] && max_len=65536
  status=0
  nice -n 19 "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=60 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$build/fuzz/findings/$h/" \
    "$build/fuzz/corpus/$h" "fuzz/corpus/$h" >"$log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added)' "$log" || true
  grep -E '^#[0-9]+ +(DONE|pulse|NEW|REDUCE).*cov:' "$log" | tail -1 || true
  ls "$build/fuzz/findings/$h"
  [[ $status -eq 0 ]] || echo "fuzz: $h exited $status: a finding (see $log)"
done
