#!/usr/bin/env bash
# Many hosts on one machine: each "host" is a Linux network namespace with its
# own address, hostname (a UTS namespace per launch) and shaped link, joined
# to the others by a bridge in a switch namespace that also holds the mpirun
# head node. Nothing is added to the root namespace, so the hosts clash with
# none of the machine's interfaces, routes or firewall rules. Open MPI starts
# its daemons through `agent` (ip netns exec, no ssh) and talks TCP between
# the namespaces, so inter-host traffic crosses real (shaped) links; see
# docs/multihost.md.
set -euo pipefail

PREFIX=${PX_NETNS_PREFIX:-px}
NET=${PX_NETNS_NET:-10.77.0}            # a /24: host i is .(i+1), the head .254
STATE=${PX_NETNS_STATE:-/run/$PREFIX-netns}
SHAPER=${PX_NETNS_SHAPER:-auto}         # netem | relay | auto (netem where the kernel has it)
SWITCH=$PREFIX-switch
SELF=$(readlink -f "${BASH_SOURCE[0]}")
PYTHON=/usr/bin/python3

usage() {
  cat <<EOF
usage: $0 COMMAND ...
  up N [--slots S] [--delay MS] [--rate MBIT] [--loss PCT] [--jitter MS]
                          hosts $PREFIX-host0..N-1 ($NET.1..N) behind $SWITCH ($NET.254)
  down                    end what runs in the namespaces and remove them (idempotent)
  shape [--delay MS] [--rate MBIT] [--loss PCT] [--jitter MS] | shape --clear
                          shape every host's outgoing link (delay is one-way)
  cut HOST | heal HOST    take a host's link down (a lost host) or back up
  exec HOST|head CMD...   run CMD on a host (or on the head node)
  probe HOST              exit 0 when the host answers the head over the network within 2 s
  mpirun ARGS...          Open MPI from the head node over TCP, ranks on the hosts
  agent HOST CMD...       Open MPI's launch agent (--mca plm_rsh_agent "$SELF agent")
  hostfile | status
HOST is hostI, $PREFIX-hostI or the host's address.
EOF
  exit 2
}
die() { echo "netns-hosts: $*" >&2; exit 1; }

host_ns() { echo "$PREFIX-host$1"; }
# Our namespaces, hosts first, so that `down` empties them before the switch.
our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$PREFIX-host[0-9]+$" | sort -V || true
  ip netns list 2>/dev/null | awk '{print $1}' | grep -Fx "$SWITCH" || true
}
num_hosts() { [ -f "$STATE/hosts" ] || die "no hosts: run '$0 up N' first"; cat "$STATE/hosts"; }

# hostI | PREFIX-hostI | NET.(I+1) -> I
host_index() {
  local h=$1 i=''
  case "$h" in
    "$PREFIX"-host*) i=${h#"$PREFIX"-host} ;;
    host*) i=${h#host} ;;
    "$NET".*) i=$(( ${h##*.} - 1 )) ;;
  esac
  [[ "$i" =~ ^[0-9]+$ ]] && ip netns list | awk '{print $1}' | grep -qFx "$(host_ns "$i")" ||
    die "unknown host '$h'"
  echo "$i"
}

# Runs in the host's namespace under its own hostname: Open MPI and parallm
# name nodes by hostname, which the namespaces otherwise share.
in_host() {
  local i=$1; shift
  exec ip netns exec "$(host_ns "$i")" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' \
    "$(host_ns "$i")" "$@"
}

# The relay: a delay line for kernels built without sch_netem (this
# project's build VMs have only fifo, tbf, htb and ingress). It is spliced
# into a host's link in the switch namespace and holds each frame the host
# sends for the delay (+- jitter, order kept as on a wire), drops a fraction
# (loss), and passes the other direction at once: netem's semantics on the
# host's egress. PACKET_VNET_HDR carries the kernel's segmentation offload
# header through, so 64 KiB TCP segments cross whole (~2.8 Gbit/s measured).
read -r -d '' RELAY_PY <<'PY' || true
import collections, os, random, select, socket, sys, time
ETH_P_ALL, SOL_PACKET, PACKET_VNET_HDR, PACKET_OUTGOING, SO_RCVBUFFORCE = 3, 263, 15, 4, 33
os.closerange(3, 65536)  # a daemon: hold none of the caller's files (a test's lock)
host_side, switch_side = sys.argv[1], sys.argv[2]
delay, jitter = float(sys.argv[3]) / 1e3, float(sys.argv[4]) / 1e3
loss = float(sys.argv[5]) / 100
def open_port(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    s.bind((name, 0))
    s.setblocking(False)
    return s
h, w = open_port(host_side), open_port(switch_side)
def send(s, frame):
    try:
        s.send(frame)
    except OSError:
        pass  # a link that is down (cut) or a full queue drops the frame, as a wire would
line = collections.deque()  # (due, frame): dues never decrease
last_due = 0.0
print("ready", flush=True)
while True:
    wait = max(0.0, line[0][0] - time.monotonic()) if line else None
    ready, _, _ = select.select([h, w], [], [], wait)
    for s in ready:
        while True:
            try:
                frame, addr = s.recvfrom(1 << 18)
            except OSError:
                break  # nothing left, or the port went down (cut): its error is reported once
            if addr[2] == PACKET_OUTGOING:
                continue  # our own sends, seen again by the tap
            if s is w:
                send(h, frame)
            elif not (loss and random.random() < loss):
                due = time.monotonic() + delay + (random.uniform(-jitter, jitter) if jitter else 0)
                last_due = max(due, last_due)
                line.append((last_due, frame))
    now = time.monotonic()
    while line and line[0][0] <= now:
        send(w, line.popleft()[1])
PY

netem_available() {
  if tc -n "$SWITCH" qdisc replace dev lo root netem delay 1ms 2>/dev/null; then
    tc -n "$SWITCH" qdisc del dev lo root 2>/dev/null || true
    return 0
  fi
  return 1
}
shaper() {  # the shaper in use for this run of hosts
  case "$SHAPER" in
    netem) netem_available || die "PX_NETNS_SHAPER=netem: this kernel has no sch_netem"; echo netem ;;
    relay) echo relay ;;
    auto) if netem_available; then echo netem; else echo relay; fi ;;
    *) die "PX_NETNS_SHAPER must be netem, relay or auto, got '$SHAPER'" ;;
  esac
}

# relay_off I: the host's switch port back on the bridge, no relay.
relay_off() {
  local i=$1 pid
  if [ -f "$STATE/relay$i.pid" ]; then
    pid=$(cat "$STATE/relay$i.pid")
    kill "$pid" 2>/dev/null || true
    rm -f "$STATE/relay$i.pid"
  fi
  if ip -n "$SWITCH" link show "wire$i" >/dev/null 2>&1; then
    ip -n "$SWITCH" link del "wire$i"
    ip -n "$SWITCH" link set "port$i" master br0
  fi
}
# relay_on I DELAY JITTER LOSS: port I leaves the bridge; a veth pair
# (wireI in the switch, bridgedI on the bridge) takes its place, and the
# relay copies frames between portI and wireI.
relay_on() {
  local i=$1 d=$2 j=$3 l=$4 pid
  [ -x "$PYTHON" ] || die "the relay needs $PYTHON"
  relay_off "$i"
  ip -n "$SWITCH" link set "port$i" nomaster
  ip -n "$SWITCH" link add "wire$i" type veth peer name "bridged$i"
  # The relay's ports carry frames only: no addresses, nothing of their own sent.
  ip netns exec "$SWITCH" sysctl -qw "net.ipv6.conf.port$i.disable_ipv6=1" \
    "net.ipv6.conf.wire$i.disable_ipv6=1" "net.ipv6.conf.bridged$i.disable_ipv6=1"
  ip -n "$SWITCH" link set "bridged$i" master br0 up
  ip -n "$SWITCH" link set "wire$i" up
  : > "$STATE/relay$i.log"
  ip netns exec "$SWITCH" setsid "$PYTHON" -c "$RELAY_PY" "port$i" "wire$i" "$d" "$j" "$l" \
    > "$STATE/relay$i.log" 2>&1 < /dev/null &
  pid=$!
  echo "$pid" > "$STATE/relay$i.pid"
  for _ in $(seq 100); do
    grep -q ready "$STATE/relay$i.log" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  die "the relay of host$i did not start: $(cat "$STATE/relay$i.log")"
}

shape() {
  local n i delay='' rate='' loss='' jitter='' clear=0 kind q=() burst
  n=$(num_hosts)
  while [ $# -gt 0 ]; do
    case "$1" in
      --clear) clear=1; shift ;;
      --delay) delay=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --loss) loss=$2; shift 2 ;;
      --jitter) jitter=$2; shift 2 ;;
      *) die "shape: unknown flag '$1'" ;;
    esac
  done
  for ((i = 0; i < n; i++)); do
    tc -n "$(host_ns $i)" qdisc del dev eth0 root 2>/dev/null || true
    relay_off "$i"
  done
  rm -f "$STATE/shape"
  if [ "$clear" = 1 ] || [ -z "$delay$rate$loss$jitter" ]; then
    [ "$clear" = 1 ] || die "shape: give --delay, --rate, --loss, --jitter or --clear"
    echo "netns-hosts: links unshaped"
    return
  fi
  kind=$(shaper)
  # Egress of each host: traffic between two hosts is shaped once per
  # direction, traffic inside a host (loopback, shared memory) never.
  if [ "$kind" = netem ]; then
    # The default queue of 1000 packets is less than a fast link holds in
    # flight over a few ms: drops would be the emulator's, not the link's.
    q=(netem limit 100000)
    [ -n "$delay" ] && q+=(delay "${delay}ms") && [ -n "$jitter" ] && q+=("${jitter}ms")
    [ -n "$rate" ] && q+=(rate "${rate}mbit")
    [ -n "$loss" ] && q+=(loss "${loss}%")
    for ((i = 0; i < n; i++)); do tc -n "$(host_ns $i)" qdisc replace dev eth0 root "${q[@]}"; done
  else
    if [ -n "$rate" ]; then
      # A bucket of 2 ms of traffic (at least two 64 KiB segments) lets
      # segmentation offload through whole; beyond 100 ms of queue, drop.
      burst=$(( rate * 1000000 / 8 / 500 ))
      [ "$burst" -lt 131072 ] && burst=131072
      q=(tbf rate "${rate}mbit" burst "$burst" latency 100ms)
      for ((i = 0; i < n; i++)); do tc -n "$(host_ns $i)" qdisc replace dev eth0 root "${q[@]}"; done
    fi
    if [ -n "$delay$loss$jitter" ]; then
      for ((i = 0; i < n; i++)); do relay_on "$i" "${delay:-0}" "${jitter:-0}" "${loss:-0}"; done
      q+=(relay delay "${delay:-0}ms" jitter "${jitter:-0}ms" loss "${loss:-0}%")
    fi
  fi
  echo "$kind: ${q[*]}" > "$STATE/shape"
  echo "netns-hosts: every host's link: $kind: ${q[*]}"
}

down() {
  local ns pids tries
  for ns in $(our_namespaces); do
    # Only processes inside our namespaces: the ranks, daemons and relays we started.
    for tries in 1 2 3 4 5 6 7 8 9 10; do
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [ -z "$pids" ] && break
      # shellcheck disable=SC2086
      if [ "$tries" -lt 5 ]; then kill -TERM $pids 2>/dev/null || true; else kill -KILL $pids 2>/dev/null || true; fi
      sleep 0.2
    done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$STATE"
}

wait_reachable() {  # every host answers TCP from the head (a refused connection is an answer)
  local n=$1 i out
  for ((i = 0; i < n; i++)); do
    for _ in $(seq 50); do
      out=$(ip netns exec "$SWITCH" timeout 1 bash -c "exec 3<>/dev/tcp/$NET.$((i + 1))/9" 2>&1 || true)
      case "$out" in *refused*) continue 2 ;; esac
      sleep 0.1
    done
    die "host$i ($NET.$((i + 1))) is not reachable from $SWITCH"
  done
}

up() {
  [ $# -ge 1 ] || usage
  local n=$1 slots=2 shaping=() i ns
  shift
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 16 ] || die "up: N must be 1..16, got '$n'"
  while [ $# -gt 0 ]; do
    case "$1" in
      --slots) slots=$2; shift 2 ;;
      --delay | --rate | --loss | --jitter) shaping+=("$1" "$2"); shift 2 ;;
      *) die "up: unknown flag '$1'" ;;
    esac
  done
  down  # the stale namespaces of an interrupted run would hold the names
  ip netns add "$SWITCH"
  ip -n "$SWITCH" link set lo up
  # A bridge takes the lowest MAC of its ports unless given one: the relay's
  # rewiring would change the head's MAC under the hosts' ARP caches and
  # stall their connections to it for a minute.
  ip -n "$SWITCH" link add br0 address 02:70:78:00:00:fe type bridge forward_delay 0 stp_state 0
  ip -n "$SWITCH" addr add "$NET.254/24" dev br0
  ip -n "$SWITCH" link set br0 up
  for ((i = 0; i < n; i++)); do
    ns=$(host_ns $i)
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Both ends are made where they live: no name ever appears in the root namespace.
    ip -n "$SWITCH" link add "port$i" type veth peer name eth0 netns "$ns"
    ip -n "$SWITCH" link set "port$i" master br0 up
    ip -n "$ns" addr add "$NET.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  # A lost host must end the job: TCP retransmits unacknowledged data for
  # ~15 min (tcp_retries2 15) before it reports the peer gone, and mpirun
  # waits that long on a lost host's daemon after parallm's watchdog has
  # ended the other ranks. 4 gives up after ~6 s. Per namespace: the
  # machine's own TCP is untouched.
  for ns in "$SWITCH" $(for ((i = 0; i < n; i++)); do host_ns $i; done); do
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=4
  done
  mkdir -p "$STATE"
  echo "$n" > "$STATE/hosts"
  for ((i = 0; i < n; i++)); do echo "$NET.$((i + 1)) slots=$slots"; done > "$STATE/hostfile"
  [ ${#shaping[@]} -gt 0 ] && shape "${shaping[@]}"
  wait_reachable "$n"
  echo "netns-hosts: $n hosts up ($NET.1-$NET.$n, $slots slots each), head $NET.254 in $SWITCH"
}

cmd=${1:-}
[ -n "$cmd" ] || usage
shift
case "$cmd" in
  up) up "$@" ;;
  down) down ;;
  shape) shape "$@" ;;
  cut | heal)
    [ $# -eq 1 ] || usage
    i=$(host_index "$1")
    # The switch side goes down: the host's frames vanish without an error
    # the host could see, as when it loses power or its cable.
    ip -n "$SWITCH" link set "port$i" "$([ "$cmd" = cut ] && echo down || echo up)"
    echo "netns-hosts: host$i ($NET.$((i + 1))) link $([ "$cmd" = cut ] && echo cut || echo restored)"
    ;;
  exec)
    [ $# -ge 2 ] || usage
    if [ "$1" = head ]; then shift; exec ip netns exec "$SWITCH" "$@"; fi
    i=$(host_index "$1"); shift
    in_host "$i" "$@"
    ;;
  probe)
    # A TCP connect from the head to a closed port: a refusal is an answer
    # (the host is there), silence is a lost host or link. What a supervisor
    # asks before restarting on a host (parallm launch --host-probe).
    [ $# -eq 1 ] || usage
    i=$(host_index "$1")
    exec ip netns exec "$SWITCH" "$PYTHON" -c 'import socket, sys
s = socket.socket()
s.settimeout(2)
try:
    s.connect((sys.argv[1], 9))
except ConnectionRefusedError:
    pass
except OSError as e:
    sys.exit(f"{sys.argv[1]} does not answer: {e}")' "$NET.$((i + 1))"
    ;;
  agent)
    # Open MPI calls AGENT HOST WORDS... as it would call ssh: the words
    # are one command line for the remote shell.
    [ $# -ge 2 ] || usage
    i=$(host_index "$1"); shift
    in_host "$i" /bin/sh -c "$*"
    ;;
  mpirun)
    [ -f "$STATE/hostfile" ] || die "no hosts: run '$0 up N' first"
    # The head node holds no slot, so every rank runs on a host; only the
    # hosts' subnet carries MPI (btl) and daemon (oob) traffic; the hosts
    # share this machine's cores, so no binding, and idle ranks yield.
    exec ip netns exec "$SWITCH" mpirun --hostfile "$STATE/hostfile" \
      --mca plm_rsh_agent "$SELF agent" --mca plm_rsh_no_tree_spawn 1 \
      --mca btl self,vader,tcp --mca btl_tcp_if_include "$NET.0/24" \
      --mca oob_tcp_if_include "$NET.0/24" --bind-to none --mca mpi_yield_when_idle 1 "$@"
    ;;
  hostfile) cat "$STATE/hostfile" ;;
  status)
    n=$(num_hosts)
    echo "shaping: $(cat "$STATE/shape" 2>/dev/null || echo none)"
    for ((i = 0; i < n; i++)); do
      printf '%s %s link %s\n' "$(host_ns $i)" "$NET.$((i + 1))" \
        "$(ip -n "$SWITCH" -o link show "port$i" | grep -q 'state UP' && echo up || echo cut)"
    done
    ;;
  *) usage ;;
esac
