# shellcheck shell=bash
# Sourced by the test clusters (scripts/slurm_local.sh: one host; scripts/slurm_cluster.sh: several
# nodes in network namespaces): what both do the same way, so the two cannot drift apart.
#   slurm_start_munge DIR         starts munged unless one runs (DIR/munged.pid.started records it)
#   slurm_stop_munge DIR          stops it if this cluster started it and no other cluster uses it
#   slurm_conf_common DIR PORT    the slurm.conf lines both clusters share
#   slurm_node_resources          "CPUS MEM": this host as slurmd measures it
#   slurm_stop_pid FILE...        stops the process of each pid file (TERM, then KILL), removes it
#   slurm_wait_idle N SECONDS     waits until N nodes are idle, resuming any down or drained one
# Callers `set -euo pipefail`.

# MUNGE authenticates every Slurm message; one daemon per host serves all clusters and users.
slurm_start_munge() {
  local dir=$1
  pgrep -x munged >/dev/null 2>&1 && return 0
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
  cp /run/munge/munged.pid "$dir/munged.pid.started" 2>/dev/null ||
    pgrep -o -x munged > "$dir/munged.pid.started"
}

# Another cluster on this host (started after this one found no munged) still needs munged: the
# last cluster to stop stops it.
slurm_stop_munge() {
  local dir=$1
  [[ -f "$dir/munged.pid.started" ]] || return 0
  if pgrep -x slurmctld >/dev/null 2>&1 || pgrep -x slurmd >/dev/null 2>&1; then
    rm -f "$dir/munged.pid.started"
    return 0
  fi
  slurm_stop_pid "$dir/munged.pid.started"
}

slurm_stop_pid() {
  local f pid
  for f in "$@"; do
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

slurm_node_resources() {
  local line cpus mem
  line=$(slurmd -C | head -1)
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$line")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$line")
  echo "${cpus:-1} ${mem:-1000}"
}

# Everything but the controller's host, the per-node files and the node and partition lines.
slurm_conf_common() {
  local dir=$1 port=$2
  cat <<CONF
ClusterName=batchlab-test
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
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmctldTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=10
Waittime=0
CONF
}

slurm_wait_idle() {
  local want=$1 seconds=$2 idle=0 node state
  for _ in $(seq "$seconds"); do
    idle=0
    while read -r node state; do
      [[ -n "$node" ]] || continue
      if [[ "$state" == "idle" ]]; then
        idle=$((idle + 1))
      elif [[ "$state" == down* || "$state" == drain* ]]; then
        scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
      fi
    done < <(sinfo -h -N -o '%N %t' 2>/dev/null || true)
    (( idle >= want )) && return 0
    sleep 1
  done
  echo "slurm: $idle of $want nodes idle after ${seconds} s" >&2
  return 1
}
