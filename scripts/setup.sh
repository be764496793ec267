#!/usr/bin/env bash
# Installs every Debian package that batchlab's build, tests and quickstart need, and only those
# that are missing. Idempotent: a second run installs nothing and prints one line.
# Usage: scripts/setup.sh [--with-python]   (--with-python adds what the tests need beyond the
#                                             build: the Python peers python3-torch and
#                                             python3-torchvision for tests and bench/, and
#                                             Debian's chromium for the dashboard's browser test)
# Last, it installs the dashboard's web packages from npm (serve/web/package-lock.json: uPlot, which
# the build embeds into `batchlab`, and playwright-core, which drives chromium in the browser test)
# unless serve/web/node_modules already matches the lock file.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build pkg-config ccache
  clang-format            # the test command checks formatting (scripts/check_format.sh)
  libtorch-dev            # LibTorch 1.13 (CPU)
  libopenblas0-pthread    # without it LibTorch multiplies with the reference BLAS (~30x slower)
  libfmt-dev libtomlplusplus-dev libsqlite3-dev sqlite3 zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  dataset-fashion-mnist   # the real small data set of the quickstart and the spine experiment
  libturbojpeg0-dev       # JPEG decoding with DCT-domain downscaling (ImageNet pipeline)
  libjpeg-turbo-progs     # tjbench: the raw decode rate the JPEG pipeline benchmark compares with
  libsentencepiece-dev    # tokenizer training and encoding for BERT pretraining text
  libgloo-dev             # headers LibTorch's ProcessGroupGloo needs (CPU data parallelism)
  python3.11-doc          # English prose (reStructuredText sources) for the MLM demo corpus
  # `batchlab plot` (the README's figure commands) runs analysis/plots/*.py with Debian's
  # /usr/bin/python3: the quickstart's setup installs what they import.
  python3-matplotlib python3-numpy
  libcpp-httplib-dev      # `batchlab serve`: the dashboard's HTTP server
)
# npm fetches the dashboard's web packages; the machine's own Node.js is used when it has one.
if ! command -v npm >/dev/null 2>&1; then pkgs+=(nodejs npm); fi
if [[ "${1:-}" == "--with-python" ]]; then
  # The Python peers: reference outputs in tests (torchvision, torch.nn) and side-by-side
  # benchmarks (bench/*.py). Always Debian's /usr/bin/python3.
  pkgs+=(python3-torch python3-torchvision)
  pkgs+=(chromium)        # the dashboard's browser test (headless)
fi

missing=()
for p in "${pkgs[@]}"; do
  # dpkg-query prints "install ok installed" only for a fully installed package.
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#pkgs[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: done"
fi

# A copy of the lock file that `npm ci` last installed says whether node_modules is current; when it
# is, nothing is fetched.
web=serve/web
stamp=$web/node_modules/.batchlab-installed-lock.json
if ! cmp -s "$web/package-lock.json" "$stamp" 2>/dev/null; then
  echo "setup: npm ci in $web"
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$web/package-lock.json" "$stamp"
fi
