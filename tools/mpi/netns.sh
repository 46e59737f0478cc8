#!/bin/bash
# Two MPI ranks on one machine whose traffic crosses a real network
# interface: each rank in its own network namespace, joined by a veth pair
# (iproute2), and shared memory between them turned off (btl self,tcp).
#
#   tools/mpi/netns.sh up [RATE]      make zooA (10.77.0.1) and zooB (10.77.0.2);
#                                     RATE (e.g. 1gbit) shapes the link with tc tbf
#   tools/mpi/netns.sh run ARGS...    mpirun -np 2, rank 0 in zooA, rank 1 in zooB:
#                                     tools/mpi/netns.sh run ./zoo pretrain gpt ...
#                                     (MPIFLAGS adds mpirun flags)
#   tools/mpi/netns.sh down           remove both namespaces
#
# Needs root, iproute2 and Open MPI (apt-get install iproute2 openmpi-bin).
# mpirun runs in zooA and starts rank 1's daemon in zooB through
# `ip netns exec` (its rsh agent is this script); both ranks see only the
# 10.77.0.0/24 link.
set -euo pipefail
A=zooA B=zooB
here=$(cd "$(dirname "$0")" && pwd)

case "${1:-}" in
up)
  ip netns add $A
  ip netns add $B
  ip link add zoo-a type veth peer name zoo-b
  ip link set zoo-a netns $A
  ip link set zoo-b netns $B
  ip -n $A addr add 10.77.0.1/24 dev zoo-a
  ip -n $B addr add 10.77.0.2/24 dev zoo-b
  for ns in $A $B; do ip -n $ns link set lo up; done
  ip -n $A link set zoo-a up
  ip -n $B link set zoo-b up
  if [ -n "${2:-}" ]; then
    ip netns exec $A tc qdisc add dev zoo-a root tbf rate "$2" burst 256kb latency 50ms
    ip netns exec $B tc qdisc add dev zoo-b root tbf rate "$2" burst 256kb latency 50ms
  fi
  echo "zooA 10.77.0.1 <-> zooB 10.77.0.2 up${2:+, shaped to $2}"
  ;;
down)
  ip netns del $A 2>/dev/null || true
  ip netns del $B 2>/dev/null || true
  ;;
agent)
  # Open MPI's rsh agent: "agent HOST COMMAND...": run it in HOST's namespace.
  shift
  host=$1
  shift
  exec ip netns exec "$host" /bin/sh -c "$*"
  ;;
run)
  shift
  hosts=$(mktemp)
  printf '%s slots=1\n%s slots=1\n' $A $B >"$hosts"
  # --bind-to none: each namespace looks like a machine of its own to
  # Open MPI, which would bind both ranks to core 0 of the one real machine.
  exec ip netns exec $A mpirun -np 2 --allow-run-as-root --hostfile "$hosts" --bind-to none \
    --mca plm_rsh_agent "$here/netns.sh agent" \
    --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
    -x GOMAXPROCS="${GOMAXPROCS:-1}" -x PATH ${MPIFLAGS:-} "$@"
  ;;
*)
  sed -n '2,16p' "$0"
  exit 2
  ;;
esac
