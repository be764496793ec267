#!/usr/bin/env bash
# Makes the project virtualenv .venv/ (git-ignored) with Debian's /usr/bin/python3 and installs the
# pinned PyPI packages of scripts/python/requirements.txt, held to the exact versions of
# scripts/python/constraints.txt. Idempotent: when .venv already holds what both files name (a
# stamp with their hash, and torch importable), it downloads nothing and prints one line.
# Called by scripts/setup.sh; CMake finds LibTorch through .venv (cmake/find_torch.cmake).
# The first install downloads about 3 GB (torch with its CUDA 13 and NCCL wheels); pip keeps
# them in its cache, so a second clone on the same machine installs without downloading.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
req=scripts/python/requirements.txt
lock=scripts/python/constraints.txt
stamp=$venv/.batchlab-requirements
want=$(cat "$req" "$lock" | sha256sum | cut -d' ' -f1)

if [[ -f $stamp && "$(cat "$stamp")" == "$want" ]] &&
  version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null); then
  echo "setup: .venv has torch $version"
  exit 0
fi
if [[ ! -x $venv/bin/python ]]; then
  echo "setup: creating $venv (/usr/bin/python3 -m venv)"
  /usr/bin/python3 -m venv "$venv"
fi
# pip unpacks about 3 GB of wheels under TMPDIR and installs about 6 GB into .venv: a disk that
# fills halfway leaves a broken .venv and an OSError that names neither. Check both places first.
need_gb=10
for dir in "$venv" "${TMPDIR:-/tmp}"; do
  free_kb=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
  if ((free_kb < need_gb * 1024 * 1024)); then
    echo "setup: error: $(df -Pk "$dir" | awk 'NR == 2 { print $6 }') (holding $dir) has" \
      "$((free_kb / 1024 / 1024)) GB free; installing torch into $venv needs about $need_gb GB." \
      "Free disk space (old clones, build folders) or point TMPDIR at a larger disk, then rerun." >&2
    exit 1
  fi
done
echo "setup: installing $(grep -v '^#' "$req" | xargs) into $venv (a first install downloads about 3 GB)"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$req" -c "$lock"
echo "$want" >"$stamp"
echo "setup: .venv has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
