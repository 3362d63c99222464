#!/usr/bin/env bash
# two-hosts.sh: two "hosts" on this machine, then CMD on the first of them.
#
#   scripts/multihost/two-hosts.sh [--rate R | --no-rate] [--agent ssh|netns]
#                                  [--slots N] [--subnet A.B.C] -- CMD [ARGS...]
#
# Makes two network namespaces joined by a veth pair, A.B.C.1 and A.B.C.2 on a
# /24 that exists only inside them, the link shaped to R (tc tbf, both
# directions; default 1gbit), each namespace with its own hostname (a UTS
# namespace). With --agent ssh (default) each host runs Debian's OpenSSH
# server on its address only, with host and user keys made for this run;
# with --agent netns Open MPI enters the other host through `ip netns exec`
# instead (no sshd). CMD runs as root on host A and sees:
#
#   DS_MH_HOSTFILE  "ADDR slots=N" for both hosts, for ds-launch --hostfile
#   DS_MH_ADDR_A/_B, DS_MH_NAME_A/_B, DS_MH_NS_A/_B, DS_MH_IF (host A's end)
#   DS_MH_SSH       an ssh command that reaches either host
#   DS_MH_DIR       this run's private directory (removed at the end)
#   OMPI_MCA_*      Open MPI's rsh agent and the subnet for its TCP traffic
#
# Everything made (namespaces, link, sshd and every process left in the
# namespaces, keys, files) is removed on exit, whatever the outcome; the
# exit status is CMD's. Needs root, iproute2 (ip, tc), util-linux
# (unshare) and, for ssh, openssh-server. docs/launch.md has the details.
set -euo pipefail

rate=1gbit agent=ssh slots=2 subnet=10.200.0
while [ $# -gt 0 ]; do
  case $1 in
  --rate) rate=$2; shift 2 ;;
  --no-rate) rate=; shift ;;
  --agent) agent=$2; shift 2 ;;
  --slots) slots=$2; shift 2 ;;
  --subnet) subnet=$2; shift 2 ;;
  --) shift; break ;;
  *) echo "two-hosts.sh: unknown option '$1'; see the usage at the top of $0" >&2
     exit 2 ;;
  esac
done
die() { echo "two-hosts.sh: error: $*" >&2; exit 2; }
[ $# -gt 0 ] || die "no command; usage: two-hosts.sh [options] -- CMD [ARGS...]"
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces); run as root"
case $agent in ssh | netns) ;; *) die "--agent '$agent': use ssh or netns" ;; esac
for tool in ip tc unshare; do
  command -v $tool > /dev/null || die "$tool not found; run make deps"
done
sshd=/usr/sbin/sshd
[ $agent = netns ] || [ -x $sshd ] ||
  die "$sshd not found; run make deps (installs openssh-server)"

# Namespace names are per run, so concurrent runs (lit runs tests in
# parallel) never meet; the addresses may repeat since each pair is sealed.
tag=dsmh$$
ns_a=${tag}a ns_b=${tag}b
addr_a=$subnet.1 addr_b=$subnet.2
name_a=ds-host-a name_b=ds-host-b
dir=$(mktemp -d /tmp/ds-two-hosts.XXXXXX)

cleanup() {
  local rc=$?
  set +e
  exec 2> /dev/null # bash would note each process ended below
  # Every process still inside either namespace (sshd, orted, ranks) was
  # started by this run.
  for ns in $ns_a $ns_b; do
    pids=$(ip netns pids $ns 2> /dev/null)
    [ -n "$pids" ] && kill -9 $pids 2> /dev/null
  done
  for ns in $ns_a $ns_b; do
    ip netns del $ns 2> /dev/null
  done
  rm -rf "$dir"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ip netns add $ns_a
ip netns add $ns_b
ip link add veth-a netns $ns_a type veth peer name veth-b netns $ns_b
for side in a b; do
  ns=ns_$side addr=addr_$side
  ip -n ${!ns} link set lo up
  ip -n ${!ns} addr add ${!addr}/24 dev veth-$side
  ip -n ${!ns} link set veth-$side up
  # tbf shapes what leaves an interface: one qdisc per end shapes both ways.
  [ -z "$rate" ] ||
    ip netns exec ${!ns} tc qdisc add dev veth-$side root tbf rate "$rate" \
      burst 256kb latency 50ms
done

printf '%s slots=%s\n%s slots=%s\n' $addr_a "$slots" $addr_b "$slots" \
  > "$dir/hostfile"

# Runs "$@" on host SIDE: its namespace, its hostname.
on_host() {
  local ns=ns_$1 name=name_$1
  shift
  exec ip netns exec ${!ns} unshare --uts -- sh -c 'hostname "$0"; exec "$@"' \
    ${!name} "$@"
}

if [ $agent = ssh ]; then
  ssh-keygen -q -t ed25519 -N '' -C ds-two-hosts -f "$dir/id_ed25519"
  cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
  : > "$dir/known_hosts"
  for side in a b; do
    addr=addr_$side
    ssh-keygen -q -t ed25519 -N '' -C ds-host-$side -f "$dir/host_$side"
    echo "${!addr} $(cut -d' ' -f1,2 "$dir/host_$side.pub")" >> "$dir/known_hosts"
    cat > "$dir/sshd_$side.conf" <<EOF
ListenAddress ${!addr}:22
HostKey $dir/host_$side
PidFile $dir/sshd_$side.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
X11Forwarding no
PrintMotd no
ClientAliveInterval 4
ClientAliveCountMax 3
EOF
    # sshd needs its privilege-separation directory, /run/sshd; a private
    # mount namespace gives it one without touching the machine's /run.
    ns=ns_$side name=name_$side
    ip netns exec ${!ns} unshare --uts --mount -- sh -c \
      'hostname "$0"; mount -t tmpfs -o mode=755 ds-run /run &&
       mkdir -m 755 /run/sshd && exec "$@"' \
      ${!name} $sshd -D -e -f "$dir/sshd_$side.conf" 2> "$dir/sshd_$side.log" &
    disown
  done
  cat > "$dir/ssh_config" <<EOF
Host *
  User root
  IdentityFile $dir/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
  ServerAliveInterval 4
  ServerAliveCountMax 3
  LogLevel ERROR
EOF
  ssh_cmd="ssh -F $dir/ssh_config"
  # Up when each answers through ssh, from host A (the only way in).
  for try in $(seq 100); do
    if ip netns exec $ns_a $ssh_cmd $addr_a true 2> /dev/null &&
       ip netns exec $ns_a $ssh_cmd $addr_b true 2> /dev/null; then
      break
    fi
    [ $try -lt 100 ] || die "sshd did not answer within 10 s: $(cat "$dir"/sshd_*.log)"
    sleep 0.1
  done
  rsh_agent=$ssh_cmd
else
  # Open MPI's rsh agent: enter the namespace that owns the address.
  cat > "$dir/netns-rsh" <<EOF
#!/bin/sh
host=\$1; shift
case \$host in
$addr_a | $name_a) ns=$ns_a name=$name_a ;;
$addr_b | $name_b) ns=$ns_b name=$name_b ;;
*) echo "netns-rsh: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec \$ns unshare --uts -- sh -c 'hostname "\$0"; exec sh -c "\$1"' \$name "\$*"
EOF
  chmod +x "$dir/netns-rsh"
  ssh_cmd=$dir/netns-rsh
  rsh_agent=$ssh_cmd
fi

export DS_MH_HOSTFILE=$dir/hostfile DS_MH_DIR=$dir DS_MH_SSH=$ssh_cmd
export DS_MH_ADDR_A=$addr_a DS_MH_ADDR_B=$addr_b
export DS_MH_NAME_A=$name_a DS_MH_NAME_B=$name_b
export DS_MH_NS_A=$ns_a DS_MH_NS_B=$ns_b DS_MH_IF=veth-a
export OMPI_MCA_plm_rsh_agent=$rsh_agent
export OMPI_MCA_btl_tcp_if_include=$subnet.0/24
export OMPI_MCA_oob_tcp_if_include=$subnet.0/24
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# In the background, so that INT and TERM reach the trap (and the cleanup
# ends CMD) at once, not when CMD is done; stdin stays CMD's.
exec 3<&0
on_host a "$@" 0<&3 &
set +e
wait $!
