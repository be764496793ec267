#!/usr/bin/env bash
# Downloads the .deb files of batchlab's build dependencies other than LibTorch into DIR (about
# 6 MiB), for a machine without a package registry: the lent GPU machines have CUDA, cuDNN, NCCL
# and a CUDA build of PyTorch 2.x, but none of fmt, toml++, SQLite, GoogleTest, ... Carry DIR to
# that machine (it is git-ignored) and `source scripts/gpu/unpack.sh DIR` there (docs/gpu.md).
# Usage (repository root, on a Debian machine, after `apt-get update`):
#   scripts/gpu/fetch-debs.sh [DIR] [extra packages...]      (DIR defaults to .gpu-debs)
set -euo pipefail
dir=${1:-.gpu-debs}
shift || true
mkdir -p "$dir"
cd "$dir"
# libgloo-dev: the PyTorch wheel ships no gloo headers, and ProcessGroupGloo.hpp includes them
# (scripts/setup.sh says why Debian's suffice). Not libtorch-dev: the machine's PyTorch provides
# LibTorch. libcpp-httplib-dev and libjs-dygraphs build `batchlab serve`.
pkgs=(
  libgloo-dev libcpp-httplib-dev libcpp-httplib0.11 libjs-dygraphs
  libfmt-dev libfmt9 libtomlplusplus-dev libtomlplusplus3 libsqlite3-dev libsqlite3-0 sqlite3
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian zlib1g-dev nlohmann-json3-dev
  libturbojpeg0-dev libturbojpeg0 libsentencepiece-dev libsentencepiece0
  pkgconf pkgconf-bin libpkgconf3 "$@"
)
apt-get download "${pkgs[@]}" >/dev/null
echo "fetch-debs: $(ls -1 ./*.deb | wc -l) packages in $dir ($(du -sh . | cut -f1))"
