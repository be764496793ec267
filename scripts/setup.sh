#!/usr/bin/env bash
# Installs every Debian package that batchlab's build, tests and quickstart need, and only those
# that are missing. Idempotent: a second run installs nothing and prints one line.
# Usage: scripts/setup.sh [--with-python]   (--with-python adds the Python peers used by the tests
#                                             and bench/: python3-torch, python3-torchvision)
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
)
if [[ "${1:-}" == "--with-python" ]]; then
  # The Python peers: reference outputs in tests (torchvision, torch.nn) and side-by-side
  # benchmarks (bench/*.py). Always Debian's /usr/bin/python3.
  pkgs+=(python3-torch python3-torchvision)
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
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
