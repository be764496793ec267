#!/usr/bin/env bash
# A one-host Slurm cluster for tests: `slurm_local.sh start DIR` writes DIR/slurm.conf for this
# host (one node, one partition `debug`), starts munged (if needed), slurmctld and slurmd with all
# state, spool, logs and pid files under DIR, and waits until the node is idle;
# `slurm_local.sh stop DIR` stops what start started. Use `export SLURM_CONF=DIR/slurm.conf` for
# sbatch and squeue. Needs root (the daemons run as SlurmUser=root) and scripts/slurm_setup.sh.
# Ports: SLURM_LOCAL_PORT (default 6817) for slurmctld, +1 for slurmd. The multi-node cluster
# (scripts/slurm_cluster.sh) shares its munge and slurm.conf parts (scripts/slurm_common.sh).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: slurm_local.sh start|stop DIR" >&2
  exit 2
fi
dir=$(realpath -m "$dir")
# shellcheck source=scripts/slurm_common.sh
source "$(dirname "$0")/slurm_common.sh"

if [[ "$cmd" == "stop" ]]; then
  slurm_stop_pid "$dir/slurmd.pid" "$dir/slurmctld.pid"
  slurm_stop_munge "$dir"
  exit 0
fi
[[ "$cmd" == "start" ]] || { echo "usage: slurm_local.sh start|stop DIR" >&2; exit 2; }

mkdir -p "$dir/state" "$dir/spool" "$dir/log"
port=${SLURM_LOCAL_PORT:-6817}
host=$(hostname -s)

slurm_start_munge "$dir"
# The node's real CPU count and memory, as slurmd measures them.
read -r cpus mem < <(slurm_node_resources)

{
  slurm_conf_common "$dir" "$port"
  cat <<CONF
SlurmctldHost=$host(127.0.0.1)
SlurmdSpoolDir=$dir/spool
SlurmdPidFile=$dir/slurmd.pid
SlurmdLogFile=$dir/log/slurmd.log
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
} > "$dir/slurm.conf"

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
if slurm_wait_idle 1 120; then  # 60 s was once too short beside a -j2 test suite
  echo "slurm_local: cluster up on $host ($cpus CPUs), SLURM_CONF=$SLURM_CONF"
  exit 0
fi
echo "slurm_local: the node did not become idle; logs in $dir/log" >&2
tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
exit 1
