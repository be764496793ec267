# Sourced by the Slurm test scripts (after they set `root`): the tiny base experiment
# (tiny_base.sh) and `need_slurm WHY_ROOT`, which installs Slurm and MUNGE (scripts/slurm_setup.sh)
# or ends the script as skipped (exit 77, CTest's SKIP_RETURN_CODE) where that is impossible or
# the script does not run as root (WHY_ROOT says what needs it).
# shellcheck source=tests/sweeps/tiny_base.sh
source "$root/tests/sweeps/tiny_base.sh"

need_slurm() {
  local rc=0
  bash "$root/scripts/slurm_setup.sh" || rc=$?
  if [[ $rc -eq 77 ]]; then echo "SKIP: Slurm cannot be installed here"; exit 77; fi
  [[ $rc -eq 0 ]] || exit "$rc"
  if [[ $(id -u) -ne 0 ]]; then echo "SKIP: $1"; exit 77; fi
}
