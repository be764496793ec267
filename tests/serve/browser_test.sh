#!/usr/bin/env bash
# The dashboard's browser test: serves DB with the batchlab binary under test on a free port, then
# drives Debian's chromium (headless) through chromedriver with tests/serve/browser_test.py
# (Debian's python3-selenium, run by /usr/bin/python3), which checks the page and saves screenshots
# into OUT. Exit 77 (CTest: skipped) with the reason when chromium, chromedriver or selenium is
# missing.
# Usage: browser_test.sh BATCHLAB DB OUT
set -euo pipefail
bin=$1
db=$2
out=$3
src=$(cd "$(dirname "$0")" && pwd)
chromium=${BATCHLAB_CHROMIUM:-/usr/bin/chromium}
chromedriver=${BATCHLAB_CHROMEDRIVER:-/usr/bin/chromedriver}
python=${BATCHLAB_BROWSER_PYTHON:-/usr/bin/python3}
if [[ ! -x "$chromium" ]]; then
  echo "SKIP: $chromium is missing (bash scripts/setup.sh --with-python installs Debian's chromium)"
  exit 77
fi
if [[ ! -x "$chromedriver" ]]; then
  echo "SKIP: $chromedriver is missing (bash scripts/setup.sh --with-python installs Debian's chromium-driver)"
  exit 77
fi
if [[ ! -x "$python" ]] || ! "$python" -c 'import selenium.webdriver' 2>/dev/null; then
  echo "SKIP: selenium does not import in $python (bash scripts/setup.sh --with-python installs Debian's python3-selenium)"
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
BATCHLAB_CHROMIUM="$chromium" BATCHLAB_CHROMEDRIVER="$chromedriver" \
  "$python" "$src/browser_test.py" --url "${url%/}" --expect-runs "$runs" --out "$out" --live-db "$db"
