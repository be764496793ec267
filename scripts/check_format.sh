#!/usr/bin/env bash
# Fails (exit 1) when a C++ file is not formatted as .clang-format says, naming each file and the
# command that fixes it. Usage: scripts/check_format.sh [FILE...]   (default: every tracked C++ file)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format is missing; run scripts/setup.sh" >&2
  exit 1
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cc')
fi
bad=()
for f in "${files[@]}"; do
  if ! clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "check_format: ${#bad[@]} file(s) not formatted as .clang-format says:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "fix with: clang-format -i --style=file ${bad[*]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
