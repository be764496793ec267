#!/usr/bin/env bash
# The dashboard's browser test: serves DB with the batchlab binary under test on a free port, then
# drives Debian's chromium (headless) through tests/serve/browser_test.mjs, which checks the page
# and saves screenshots into OUT. Exit 77 (CTest: skipped) with the reason when node or chromium is
# missing.
# Usage: browser_test.sh BATCHLAB DB OUT
set -euo pipefail
bin=$1
db=$2
out=$3
src=$(cd "$(dirname "$0")" && pwd)
chromium=${BATCHLAB_CHROMIUM:-/usr/bin/chromium}
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed (bash scripts/setup.sh installs it)"
  exit 77
fi
if [[ ! -x "$chromium" ]]; then
  echo "SKIP: $chromium is missing (bash scripts/setup.sh --with-python installs Debian's chromium)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
# A copy: the test writes a run into it while the page is open, as a sweep would.
cp "$db" "$out/live.db"
db="$out/live.db"
"$bin" serve --db "$db" --port 0 >"$out/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'http://[^ ]*' "$out/serve.log" | head -n 1 || true)
  [[ -n "$url" ]] && break
  if ! kill -0 "$server" 2>/dev/null; then
    echo "batchlab serve exited before listening:"
    cat "$out/serve.log"
    exit 1
  fi
  sleep 0.1
done
if [[ -z "$url" ]]; then
  echo "batchlab serve printed no URL within 10 s:"
  cat "$out/serve.log"
  exit 1
fi
runs=$(sqlite3 -readonly "$db" "SELECT count(*) FROM runs")
BATCHLAB_CHROMIUM="$chromium" node "$src/browser_test.mjs" --url "${url%/}" --expect-runs "$runs" \
  --out "$out" --live-db "$db"
