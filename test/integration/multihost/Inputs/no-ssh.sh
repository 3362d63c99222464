#!/bin/sh
# no-ssh.sh DIR: each host starts its own ds-launch --no_ssh (host B's
# through two-hosts.sh's netns agent, no sshd anywhere); who runs where,
# then ZeRO-2 on one host and on the two joined nodes.
. "$(dirname "$0")/setup.sh"
# mpirun must never start anything remotely: with --no_ssh each node's
# mpirun is local, and an agent that fails proves it.
export OMPI_MCA_plm_rsh_agent=false
# Node 1 first: it waits for node 0's rendezvous to open.
on_b() {
  echo "cd $T && export OMPI_MCA_plm_rsh_agent=false && exec $*" > node1.sh
  "$DS_MH_SSH" "$DS_MH_ADDR_B" sh "$T/node1.sh" &
}
# From the hostfile: the node count, each node's slots, node 0's address.
NODE="$LAUNCH --no_ssh --hostfile $DS_MH_HOSTFILE --rendezvous_timeout 60"
on_b "$NODE --node_rank 1 -- sh -c 'echo \"rank \$RANK of \$WORLD_SIZE on \$(hostname), \$DS_MARK\"' > b.out"
$NODE --node_rank 0 -- \
  sh -c 'echo "rank $RANK of $WORLD_SIZE on $(hostname), $DS_MARK"' > a.out
wait $!
sort a.out b.out
"$LAUNCH" --num_procs 4 -- "$TRAIN" $TRAIN_ARGS --steps 8 --metrics one.jsonl
# From the flags.
NODE="$LAUNCH --no_ssh --num_nodes 2 --num_procs 2 --master_addr $DS_MH_ADDR_A --master_port 29400 --rendezvous_timeout 60"
on_b "$NODE --node_rank 1 -- $TRAIN $TRAIN_ARGS --steps 8 --metrics two.jsonl"
$NODE --node_rank 0 -- "$TRAIN" $TRAIN_ARGS --steps 8 --metrics two.jsonl
wait $!
python3 "$(dirname "$0")/compare.py" one.jsonl two.jsonl
