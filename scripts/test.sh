#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs the test suite.
# Usage: scripts/test.sh [--all]   (--all also runs the tests labelled `slow`)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-python
bash scripts/check_format.sh
bash scripts/build.sh
label_args=(-LE slow)
if [[ "${1:-}" == "--all" ]]; then label_args=(); fi
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900 "${label_args[@]}"
