#!/usr/bin/env bash
# tools/netsim.sh - a simulated cluster on one machine: runs an MPI program with every rank on its own
# "machine" (a Linux network namespace), the machines joined to one switch (a bridge in a namespace of its
# own) by veth links that `tc` shapes to a given rate (tbf) and one-way delay (netem), with Open MPI forced
# onto TCP over those links. Everything it makes lives inside namespaces it creates: the host's own
# interfaces, routes and qdiscs are never touched, and it all goes away on exit, also on failure or a signal.
#
#   tools/netsim.sh [options] -- PROGRAM [ARGS...]        (as root: it makes namespaces and qdiscs)
#     -n, --ranks N        ranks, one per simulated machine (default 2, at most 64)
#     --rate RATE          every link's rate in each direction, tc's units: 1gbit, 10gbit, 500mbit;
#                          "none" leaves the links unshaped (default 1gbit)
#     --delay TIME         one-way delay added where a machine sends (netem), e.g. 0.2ms (default none);
#                          a message from rank A to rank B crosses one delayed hop
#     --require-delay      fail (exit 77) when the kernel has no netem, instead of running without delay
#     --timeout SECONDS    mpirun's --timeout (default 300)
#     --mpi-arg ARG        one more argument for mpirun (repeat it), before PROGRAM
#     --each               no mpirun: run PROGRAM once on every machine, at the same time, with
#                          NETSIM_RANK (0..N-1), NETSIM_SIZE, NETSIM_ADDR (this machine's address),
#                          NETSIM_MASTER (machine 0's), NETSIM_IFNAME (eth0), NETSIM_RATE and
#                          NETSIM_DELAY in its environment (for torch.distributed, gloo and the
#                          like); the status is the first non-zero one of the ranks', and every rank is
#                          killed after --timeout seconds
#     --check              only make and tear down a 2-machine cluster; exit 0, or 77 with the reason
#   Exit status: the program's (mpirun's), or 77 when namespaces, veth links or tbf cannot be made here
#   (CTest's SKIP_RETURN_CODE), or 2 for a usage error.
#
# The layout, for N ranks (P is dzns<pid>, so runs do not collide):
#   ${P}sw: bridge br0, with one port p<i> per machine            (the switch)
#   ${P}r<i>: eth0 = 10.231.0.<i+1>/24, the other end of p<i>     (machine i, runs rank i)
#   each machine's eth0 egress: [netem delay] -> tbf rate; the switch's p<i> egress: tbf rate
# mpirun runs on machine 0 and starts Open MPI's daemon on every other machine through an rsh agent that
# this script writes: it plays ssh, running the daemon's command (which Open MPI composes) with /bin/sh
# inside that machine's namespace. Open MPI's messages (pml ob1, btl tcp,self) and its out-of-band
# traffic use eth0 only, so every byte between ranks crosses the shaped links.
#
# What the kernel must have: network namespaces, veth, bridge and the tbf qdisc (present in Debian's
# kernels and in CI's VM); netem (sch_netem) for --delay, which some kernels lack: then the run goes on
# without the delay and says so on stderr, or stops with 77 under --require-delay.
set -uo pipefail

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

RANKS=2 RATE=1gbit DELAY="" REQUIRE_DELAY=0 TIMEOUT=300 CHECK=0 EACH=0
MPI_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--ranks) RANKS=${2:-}; shift 2 ;;
    --rate) RATE=${2:-}; shift 2 ;;
    --delay) DELAY=${2:-}; shift 2 ;;
    --require-delay) REQUIRE_DELAY=1; shift ;;
    --timeout) TIMEOUT=${2:-}; shift 2 ;;
    --mpi-arg) MPI_ARGS+=("${2:-}"); shift 2 ;;
    --check) CHECK=1; shift ;;
    --each) EACH=1; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "netsim: unknown option '$1' (options end with --, then the program)" >&2; exit 2 ;;
  esac
done
[[ "$RANKS" =~ ^[0-9]+$ ]] && [ "$RANKS" -ge 1 ] && [ "$RANKS" -le 64 ] ||
  { echo "netsim: --ranks must be 1..64, got '$RANKS'" >&2; exit 2; }
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || { echo "netsim: --timeout must be whole seconds, got '$TIMEOUT'" >&2; exit 2; }
[[ "$RATE" =~ ^(none|[0-9]+(\.[0-9]+)?([kmg]?(bit|bps)))$ ]] ||
  { echo "netsim: --rate must look like 1gbit, 500mbit or none, got '$RATE'" >&2; exit 2; }
[ -z "$DELAY" ] || [[ "$DELAY" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] ||
  { echo "netsim: --delay must look like 0.2ms or 50us, got '$DELAY'" >&2; exit 2; }
if [ "$CHECK" = 1 ]; then RANKS=2; elif [ $# -eq 0 ]; then echo "netsim: no program (put it after --)" >&2; exit 2; fi

skip() { echo "netsim: skipped: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root (network namespaces and qdiscs need CAP_NET_ADMIN)"
command -v ip >/dev/null && command -v tc >/dev/null || skip "ip or tc is missing (Debian's iproute2)"
if [ "$CHECK" = 0 ] && [ "$EACH" = 0 ]; then command -v mpirun >/dev/null || skip "mpirun is missing (Debian's openmpi-bin)"; fi

P="dzns$$"
SW="${P}sw"
WORK=""
ns() { echo "${P}r$1"; }
addr() { echo "10.231.0.$(($1 + 1))"; }

# --- tear-down: every namespace this run made (their links and qdiscs go with them) ---------------------
cleanup() {
  local n
  for n in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    case "$n" in "$SW"|"${P}r"*) ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
                                  ip netns del "$n" 2>/dev/null ;; esac
  done
  [ -z "$WORK" ] || rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# tbf: burst of 1 ms at the rate (at least 64 KB, so a GSO packet of veth fits), a queue of 50 ms.
shape() {  # shape NAMESPACE DEVICE PARENT_ARGS...
  local netns=$1 dev=$2; shift 2
  [ "$RATE" = none ] && return 0
  local bps
  bps=$(awk -v r="$RATE" 'BEGIN { m = 1; u = tolower(r)
        if (u ~ /kbit$/) m = 1e3; else if (u ~ /mbit$/) m = 1e6; else if (u ~ /gbit$/) m = 1e9
        else if (u ~ /kbps$/) m = 8e3; else if (u ~ /mbps$/) m = 8e6; else if (u ~ /gbps$/) m = 8e9
        else if (u ~ /bps$/) m = 8; sub(/[a-z]+$/, "", u); printf "%.0f", u * m }')
  local burst=$((bps / 8 / 1000)); [ "$burst" -ge 65536 ] || burst=65536
  tc -n "$netns" qdisc add dev "$dev" "$@" tbf rate "$RATE" burst "$burst" latency 50ms
}

# --- the cluster -------------------------------------------------------------------------------------
ip netns add "$SW" 2>/dev/null || skip "cannot make a network namespace here (ip netns add failed)"
ip -n "$SW" link add br0 type bridge || skip "cannot make a bridge inside a namespace"
ip -n "$SW" link set br0 up
ip -n "$SW" link set lo up
HAVE_NETEM=1
for ((i = 0; i < RANKS; i++)); do
  r=$(ns "$i")
  ip netns add "$r" || skip "cannot make namespace $r"
  ip -n "$SW" link add "p$i" type veth peer name eth0 netns "$r" || skip "cannot make a veth pair"
  ip -n "$SW" link set "p$i" master br0
  ip -n "$SW" link set "p$i" up
  ip -n "$r" addr add "$(addr "$i")/24" dev eth0
  ip -n "$r" link set eth0 up
  ip -n "$r" link set lo up
  if [ -n "$DELAY" ] && [ "$HAVE_NETEM" = 1 ]; then
    if tc -n "$r" qdisc add dev eth0 root handle 1: netem delay "$DELAY" 2>/dev/null; then
      shape "$r" eth0 parent 1: handle 2: || skip "tc cannot add a tbf qdisc under netem"
    else
      HAVE_NETEM=0
      [ "$REQUIRE_DELAY" = 0 ] || skip "the kernel has no netem qdisc (sch_netem), so --delay $DELAY cannot be simulated"
      echo "netsim: warning: the kernel has no netem qdisc (sch_netem): running without the $DELAY delay" >&2
    fi
  fi
  if [ -z "$DELAY" ] || [ "$HAVE_NETEM" = 0 ]; then shape "$r" eth0 root || skip "tc cannot add a tbf qdisc"; fi
  shape "$SW" "p$i" root || skip "tc cannot add a tbf qdisc"
done
echo "netsim: $RANKS machines on one switch, links $RATE$([ -n "$DELAY" ] && [ "$HAVE_NETEM" = 1 ] && echo ", $DELAY one-way delay"), namespaces ${P}r0..$((RANKS - 1)) and $SW" >&2
if [ "$CHECK" = 1 ]; then
  # one TCP connection across the switch proves the links carry traffic
  ip netns exec "$(ns 1)" timeout 10 bash -c 'exec 3<>/dev/tcp/'"$(addr 0)"'/9' 2>/dev/null
  ip netns exec "$(ns 0)" ip neigh show dev eth0 >/dev/null || skip "the namespaces cannot reach each other"
  echo "netsim: ok" >&2
  exit 0
fi

# --- a program on every machine (--each) -------------------------------------------------------------
APPLIED_DELAY="$([ "$HAVE_NETEM" = 1 ] && echo "$DELAY")"
if [ "$EACH" = 1 ]; then
  pids=()
  for ((i = 0; i < RANKS; i++)); do
    ip netns exec "$(ns "$i")" env NETSIM_RANK="$i" NETSIM_SIZE="$RANKS" NETSIM_ADDR="$(addr "$i")" \
      NETSIM_MASTER="$(addr 0)" NETSIM_IFNAME=eth0 NETSIM_RATE="$RATE" NETSIM_DELAY="$APPLIED_DELAY" \
      timeout -k 5 "$TIMEOUT" "$@" &
    pids+=($!)
  done
  status=0
  for p in "${pids[@]}"; do
    wait "$p"; rc=$?
    [ "$status" != 0 ] || status=$rc
  done
  exit "$status"
fi

# --- Open MPI across the machines --------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/netsim.XXXXXXXX") || exit 1
AGENT="$WORK/agent"
{
  echo '#!/bin/sh'
  echo '# netsim rsh agent: "agent HOST COMMAND..." runs COMMAND (composed by mpirun, like ssh) in HOST'"'"'s namespace'
  echo 'host=$1; shift'
  echo 'case "$host" in'
  for ((i = 0; i < RANKS; i++)); do echo "  $(addr "$i")) netns=$(ns "$i") ;;"; done
  echo '  *) echo "netsim agent: unknown host $host" >&2; exit 255 ;;'
  echo 'esac'
  echo 'exec ip netns exec "$netns" /bin/sh -c "$*"'
} >"$AGENT"
chmod 700 "$AGENT"
HOSTS=""
for ((i = 0; i < RANKS; i++)); do HOSTS+="${HOSTS:+,}$(addr "$i"):1"; done
ip netns exec "$(ns 0)" mpirun --allow-run-as-root -np "$RANKS" --host "$HOSTS" --timeout "$TIMEOUT" \
  --mca plm_rsh_agent "$AGENT" --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include eth0 \
  --mca oob_tcp_if_include eth0 --mca orte_keep_fqdn_hostnames 1 -x NETSIM_RATE="$RATE" \
  -x NETSIM_DELAY="$APPLIED_DELAY" "${MPI_ARGS[@]}" "$@"
