#!/usr/bin/env bash
# Installs what batchlab's build, tests and quickstart need, and only what is missing. Idempotent:
# a second run installs and downloads nothing and prints two lines.
#   1. Debian packages (apt): compilers, libraries, data, the browser test's chromium and driver.
#   2. The project virtualenv .venv/ (git-ignored; scripts/setup_venv.sh): the pinned PyPI `torch`
#      wheel, whose LibTorch (with CUDA and NCCL) the build links and whose Python the peers run,
#      and torchvision. Never the system Python.
# Usage: scripts/setup.sh [--with-python]   (--with-python adds what only the tests need: Debian's
#                                             chromium, chromium-driver and python3-selenium for
#                                             the dashboard's browser test)
# Nothing comes from npm: the dashboard's chart code is Debian's libjs-dygraphs, embedded into the
# binary at build time (cmake/serve.cmake).
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(
  build-essential cmake ninja-build pkg-config ccache
  clang-format            # the test command checks formatting (scripts/check_format.sh)
  python3-venv            # the project virtualenv that holds the pinned torch wheel
  libopenblas0-pthread    # BLAS of numpy and the analysis scripts (LibTorch brings MKL)
  libfmt-dev libtomlplusplus-dev libsqlite3-dev sqlite3 zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  dataset-fashion-mnist   # the real small data set of the quickstart and the spine experiment
  libturbojpeg0-dev       # JPEG decoding with DCT-domain downscaling (ImageNet pipeline)
  libjpeg-turbo-progs     # tjbench: the raw decode rate the JPEG pipeline benchmark compares with
  libsentencepiece-dev    # tokenizer training and encoding for BERT pretraining text
  # The gloo headers that LibTorch's ProcessGroupGloo.hpp includes (CPU data parallelism): the
  # wheel ships none. Gloo itself is compiled into libtorch_cpu; the header needs only the types
  # and the Store interface, whose newer methods it guards with GLOO_STORE_HAS_STORE_V2.
  libgloo-dev
  python3.11-doc          # English prose (reStructuredText sources) for the MLM demo corpus
  # `batchlab plot` (the README's figure commands) runs analysis/plots/*.py with Debian's
  # /usr/bin/python3: the quickstart's setup installs what they import.
  python3-matplotlib python3-numpy
  libcpp-httplib-dev      # `batchlab serve`: the dashboard's HTTP server
  libjs-dygraphs          # `batchlab serve`: the dashboard's charts (embedded at build time)
)
if [[ "${1:-}" == "--with-python" ]]; then
  pkgs+=(chromium chromium-driver python3-selenium)   # the dashboard's browser test (headless)
fi

missing=()
for p in "${pkgs[@]}"; do
  # dpkg-query prints "install ok installed" only for a fully installed package.
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#pkgs[@]} Debian packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: done"
fi

bash scripts/setup_venv.sh
