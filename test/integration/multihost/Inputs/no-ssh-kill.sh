#!/bin/sh
# no-ssh-kill.sh DIR: ds-launch --no_ssh on both hosts (as no-ssh.sh), then
# SIGKILL of one of host B's ranks once the run is past step 3; prints how
# long each node's launcher took to end after it.
. "$(dirname "$0")/setup.sh"
export OMPI_MCA_plm_rsh_agent=false DSRT_COMM_TIMEOUT_S=5
NODE="$LAUNCH --no_ssh --num_nodes 2 --num_procs 2 --master_addr $DS_MH_ADDR_A --rendezvous_timeout 60"
now() { date +%s.%N; }
echo "cd $T && export OMPI_MCA_plm_rsh_agent=false DSRT_COMM_TIMEOUT_S=5 &&
  $NODE --node_rank 1 -- $TRAIN $TRAIN_ARGS --steps 100000 --metrics m.jsonl \
  2> b.err; echo \$? \$(date +%s.%N) > b.end" > node1.sh
"$DS_MH_SSH" "$DS_MH_ADDR_B" sh "$T/node1.sh" &
(status=0
 $NODE --node_rank 0 -- "$TRAIN" $TRAIN_ARGS --steps 100000 --metrics m.jsonl \
   2> a.err || status=$?
 echo $status $(now) > a.end) &
for i in $(seq 600); do
  [ "$(cat m.jsonl 2> /dev/null | wc -l)" -ge 3 ] && break
  sleep 0.1
done
# Host B's ranks: the ds-train processes in its namespace.
victim=
for pid in $(ip netns pids "$DS_MH_NS_B"); do
  [ "$(cat /proc/$pid/comm 2> /dev/null)" = ds-train ] && victim=$pid && break
done
[ -n "$victim" ] || { echo "no rank on host B to kill"; exit 1; }
kill -9 "$victim"
fault=$(now)
echo "fault: SIGKILL of a rank on host B after step $(wc -l < m.jsonl)"
for i in $(seq 600); do
  [ -s a.end ] && [ -s b.end ] && break
  sleep 0.1
done
wait
for node in a b; do
  read status end < $node.end
  python3 -c "import sys; s, t = float(sys.argv[2]) - float(sys.argv[1]), 30
print(f'node on host $node: exit status {sys.argv[3]} after {s:.1f} s',
      '(within 30 s)' if s < t else '(LATE)')" \
    "$fault" "$end" "$status"
done
grep -h -o 'world rank [0-9] on [^ ,]*' a.err | sort -u
