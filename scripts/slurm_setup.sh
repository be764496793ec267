#!/usr/bin/env bash
# Installs Slurm (slurmctld, slurmd, sbatch, squeue) and MUNGE for the single-host Slurm test
# (tests/sweeps/slurm_test.sh). Idempotent: installs only what is missing.
# Exit codes: 0 ready, 77 cannot install here (no apt-get, or neither root nor sudo), 1 failed.
set -euo pipefail

pkgs=(slurm-wlm munge)
missing=()
for p in "${pkgs[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "slurm_setup: ${pkgs[*]} present"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "slurm_setup: apt-get not available; install ${missing[*]} by hand" >&2
  exit 77
fi
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if ! sudo -n true 2>/dev/null; then
    echo "slurm_setup: need root or passwordless sudo to install ${missing[*]}" >&2
    exit 77
  fi
  sudo_cmd=(sudo -n)
fi
echo "slurm_setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  "${sudo_cmd[@]}" apt-get update -qq || { echo "slurm_setup: apt-get update failed" >&2; exit 77; }
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { echo "slurm_setup: apt-get install ${missing[*]} failed" >&2; exit 77; }
fi
echo "slurm_setup: done"
