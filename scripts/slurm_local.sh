#!/usr/bin/env bash
# A one-host Slurm cluster for tests: `slurm_local.sh start DIR` writes DIR/slurm.conf for this
# host (one node, one partition `debug`), starts munged (if needed), slurmctld and slurmd with all
# state, spool, logs and pid files under DIR, and waits until the node is idle;
# `slurm_local.sh stop DIR` stops what start started. Use `export SLURM_CONF=DIR/slurm.conf` for
# sbatch and squeue. Needs root (the daemons run as SlurmUser=root) and scripts/slurm_setup.sh.
# Ports: SLURM_LOCAL_PORT (default 6817) for slurmctld, +1 for slurmd.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: slurm_local.sh start|stop DIR" >&2
  exit 2
fi
dir=$(realpath -m "$dir")

stop() {
  for f in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid.started"; do
    [[ -f "$f" ]] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

if [[ "$cmd" == "stop" ]]; then
  stop
  exit 0
fi
[[ "$cmd" == "start" ]] || { echo "usage: slurm_local.sh start|stop DIR" >&2; exit 2; }

mkdir -p "$dir/state" "$dir/spool" "$dir/log"
port=${SLURM_LOCAL_PORT:-6817}
host=$(hostname -s)

# MUNGE authenticates every Slurm message; one daemon per host serves all users.
if ! pgrep -x munged >/dev/null 2>&1; then
  if [[ ! -s /etc/munge/munge.key ]]; then
    if command -v mungekey >/dev/null 2>&1; then
      mungekey --create --keyfile=/etc/munge/munge.key
    else
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key 2>/dev/null || true
    chmod 400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
  if id munge >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
  else
    /usr/sbin/munged --force
  fi
  for _ in $(seq 50); do [[ -s /run/munge/munged.pid ]] && break; sleep 0.1; done
  cp /run/munge/munged.pid "$dir/munged.pid.started" 2>/dev/null || pgrep -o -x munged > "$dir/munged.pid.started"
fi

# The node's real CPU count and memory, as slurmd measures them.
node_line=$(slurmd -C | head -1)
cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$node_line")
mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node_line")

cat > "$dir/slurm.conf" <<CONF
ClusterName=batchlab-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=10
Waittime=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=${cpus:-1} RealMemory=${mem:-1000} State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  state=$(sinfo -h -N -o '%t' 2>/dev/null | head -1 || true)
  if [[ "$state" == "idle" ]]; then
    echo "slurm_local: cluster up on $host ($cpus CPUs), SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  if [[ "$state" == "down"* || "$state" == "drain"* ]]; then
    scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
  fi
  sleep 1
done
echo "slurm_local: the node did not become idle (state '${state:-none}'); logs in $dir/log" >&2
tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
exit 1
