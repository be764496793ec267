#!/usr/bin/env bash
# A multi-node Slurm test cluster on one machine (tests/sweeps/slurm_multinode_test.sh):
#   slurm_cluster.sh start DIR [NODES]   NODES (default 3, at least 3) nodes n1..nN, each a slurmd in
#                                        a network namespace of its own with an address of its own
#   slurm_cluster.sh stop DIR            stops everything start made; safe to run twice
#   slurm_cluster.sh kill-node DIR NODE  kills every process of the node (its slurmd, job steps and
#                                        tasks), as when a node loses power; Slurm finds it down
#   slurm_cluster.sh start-node DIR NODE starts a killed node's slurmd again
# The script makes a bridge in the root namespace with the first address of a /24 of the
# benchmarking range 198.18.0.0/15 (which no real network uses), one namespace per node joined to
# the bridge by a veth pair, and runs slurmctld in the root namespace on the bridge address and
# each slurmd inside its namespace (nsenter: `ip netns exec` remounts /sys, which slurmd's cgroup
# plugin then cannot find). munged is shared through its socket in /run/munge. Traffic stays on the
# bridge and loopback.
# Name resolution: Slurm itself reaches the nodes by NodeAddr, but jobs resolve node names (the
# first host of SLURM_JOB_NODELIST is a multi-node job's rendezvous address): every node runs in a
# private mount namespace (unshare) in which DIR/hosts (this machine's /etc/hosts plus the nodes)
# is bind-mounted over /etc/hosts, so the names resolve on the nodes and /etc/hosts is never edited.
# The nodes share this machine's hostname (no UTS namespace), so only the addresses tell them apart.
# All state, spool, log and pid files are under DIR; `export SLURM_CONF=DIR/slurm.conf` (printed).
# Port: SLURM_CLUSTER_PORT (default 6827) for slurmctld, +1 for slurmd; the bridge, namespace and
# veth names and the /24 are derived from it, so a cluster left behind by another run cannot answer.
# SLURM_CLUSTER_SLURMD_TIMEOUT (default 10 s): how soon slurmctld declares a silent node down.
# Needs root, ip, nsenter, unshare and scripts/slurm_setup.sh. Exit codes: 0 up, 77 network
# namespaces or mounts cannot be made here (tests skip), 2 usage, 1 failed.
set -euo pipefail

usage() {
  echo "usage: slurm_cluster.sh start DIR [NODES] | stop DIR | kill-node DIR NODE | start-node DIR NODE" >&2
  exit 2
}
cmd=${1:-}
dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || usage
dir=$(realpath -m "$dir")
# shellcheck source=scripts/slurm_common.sh
source "$(dirname "$0")/slurm_common.sh"

# DIR/cluster.env records the names start chose, so stop undoes exactly that whatever the
# environment says then.
load_env() {
  [[ -f "$dir/cluster.env" ]] || return 1
  # shellcheck source=/dev/null
  source "$dir/cluster.env"
}

netns_pids() {
  ip netns pids "$1" 2>/dev/null || true
}

# Every process whose network namespace is the node's: its slurmd, slurmstepd and the job tasks,
# with each of the signals given in turn until none is left.
kill_node() {
  local ns=$1 pids
  shift
  for sig in "$@"; do
    pids=$(netns_pids "$ns")
    [[ -n "$pids" ]] || return 0
    # shellcheck disable=SC2086
    kill -s "$sig" $pids 2>/dev/null || true
    for _ in $(seq 30); do [[ -z "$(netns_pids "$ns")" ]] && return 0; sleep 0.1; done
  done
}

start_node() {
  local node=$1
  # shellcheck disable=SC2016 # the inner shell expands its own arguments
  nsenter --net="/run/netns/${prefix}-$node" unshare --mount --propagation private \
    sh -c 'mount --bind "$1" /etc/hosts && exec slurmd -f "$2" -N "$3"' sh \
    "$dir/hosts" "$dir/slurm.conf" "$node"
}

stop() {
  load_env || return 0
  local i ns
  for i in $(seq "$nodes"); do
    ns="${prefix}-n$i"
    [[ -e "/run/netns/$ns" ]] || continue
    kill_node "$ns" TERM KILL
    rm -f "$dir/slurmd.n$i.pid"
  done
  slurm_stop_pid "$dir/slurmctld.pid"
  slurm_stop_munge "$dir"
  for i in $(seq "$nodes"); do
    ns="${prefix}-n$i"
    # Deleting the namespace deletes its end of the veth pair, and with it the bridge's end.
    if [[ -e "/run/netns/$ns" ]]; then ip netns del "$ns" 2>/dev/null || true; fi
    ip link del "${prefix}n$i" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  rm -f "$dir/cluster.env"
}

case "$cmd" in
  stop)
    stop
    exit 0
    ;;
  kill-node | start-node)
    node=${3:-}
    [[ -n "$node" ]] || usage
    load_env || { echo "slurm_cluster: no cluster in $dir" >&2; exit 1; }
    [[ -e "/run/netns/${prefix}-$node" ]] || { echo "slurm_cluster: no node $node" >&2; exit 1; }
    if [[ "$cmd" == kill-node ]]; then
      # SIGKILL alone: nothing on a node that loses power gets to write a last checkpoint.
      kill_node "${prefix}-$node" KILL
      rm -f "$dir/slurmd.$node.pid"
    else
      start_node "$node"
    fi
    exit 0
    ;;
  start) ;;
  *) usage ;;
esac

nodes=${3:-3}
[[ "$nodes" =~ ^[0-9]+$ && "$nodes" -ge 3 && "$nodes" -le 200 ]] ||
  { echo "slurm_cluster: NODES must be 3 to 200, not '$nodes'" >&2; exit 2; }
port=${SLURM_CLUSTER_PORT:-6827}
[[ "$port" =~ ^[0-9]+$ && "$port" -ge 1024 && "$port" -le 65000 ]] ||
  { echo "slurm_cluster: SLURM_CLUSTER_PORT must be 1024 to 65000, not '$port'" >&2; exit 2; }
slurmd_timeout=${SLURM_CLUSTER_SLURMD_TIMEOUT:-10}

skip() {
  echo "slurm_cluster: $*; cannot make the namespaced cluster here" >&2
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, and the daemons run as root)"
for tool in ip nsenter unshare slurmctld slurmd; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is missing"
done
if [[ -f "$dir/cluster.env" ]]; then
  echo "slurm_cluster: $dir holds a cluster; run 'slurm_cluster.sh stop $dir' first" >&2
  exit 1
fi

# Interface names are at most 15 characters: bl<port>-nI for namespaces, bl<port>nI for the root
# ends of the veth pairs, bl<port>br for the bridge. One /24 of 198.18.0.0/15 per port.
prefix="bl$port"
bridge="${prefix}br"
block=$((port % 512))
net="198.$((18 + block / 256)).$((block % 256))"
if ip link show "$bridge" >/dev/null 2>&1; then
  echo "slurm_cluster: bridge $bridge exists (a cluster on port $port still runs); stop it" >&2
  exit 1
fi
if ip -o addr show | grep -q " inet $net\."; then
  echo "slurm_cluster: $net.0/24 is in use here; choose another SLURM_CLUSTER_PORT" >&2
  exit 1
fi
mkdir -p "$dir/state" "$dir/log"
cat > "$dir/cluster.env" <<ENV
prefix=$prefix
bridge=$bridge
nodes=$nodes
ENV
# Whatever fails from here on leaves nothing behind.
on_exit() {
  local rc=$?
  if [[ $rc -ne 0 ]]; then stop; fi
}
trap on_exit EXIT

ip link add "$bridge" type bridge 2>/dev/null || skip "cannot make a bridge (ip link add type bridge)"
ip addr add "$net.1/24" dev "$bridge"
ip link set "$bridge" up
{
  echo "# batchlab test cluster $dir (bind-mounted over /etc/hosts on its nodes)"
  for i in $(seq "$nodes"); do echo "$net.$((10 + i)) n$i"; done
  cat /etc/hosts
} > "$dir/hosts"
for i in $(seq "$nodes"); do
  ns="${prefix}-n$i"
  ip netns add "$ns" 2>/dev/null || skip "cannot make a network namespace (ip netns add)"
  ip link add "${prefix}n$i" type veth peer name eth0 netns "$ns" ||
    skip "cannot make a veth pair into a namespace"
  ip link set "${prefix}n$i" master "$bridge"
  ip link set "${prefix}n$i" up
  nsenter --net="/run/netns/$ns" ip addr add "$net.$((10 + i))/24" dev eth0
  nsenter --net="/run/netns/$ns" ip link set eth0 up
  nsenter --net="/run/netns/$ns" ip link set lo up
done
# shellcheck disable=SC2016 # the inner shell expands its own arguments
nsenter --net="/run/netns/${prefix}-n1" unshare --mount --propagation private \
  sh -c 'mount --bind "$1" /etc/hosts' sh "$dir/hosts" 2>/dev/null ||
  skip "cannot bind-mount a hosts file in a private mount namespace (unshare --mount)"

slurm_start_munge "$dir"
read -r cpus mem < <(slurm_node_resources)
{
  slurm_conf_common "$dir" "$port"
  cat <<CONF
SlurmctldHost=$(hostname -s)($net.1)
SlurmdSpoolDir=$dir/spool_%n
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmdTimeout=$slurmd_timeout
CONF
  for i in $(seq "$nodes"); do
    echo "NodeName=n$i NodeAddr=$net.$((10 + i)) CPUs=$cpus RealMemory=$mem State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
} > "$dir/slurm.conf"

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
for i in $(seq "$nodes"); do start_node "n$i"; done
if ! slurm_wait_idle "$nodes" 120; then  # as slurm_local.sh
  echo "slurm_cluster: not all $nodes nodes became idle; logs in $dir/log" >&2
  sinfo -N >&2 || true
  tail -n 20 "$dir"/log/*.log >&2 || true
  exit 1
fi
echo "slurm_cluster: $nodes nodes n[1-$nodes] idle on $net.0/24 (controller $net.1:$port, $cpus CPUs each)"
echo "export SLURM_CONF=$SLURM_CONF"
