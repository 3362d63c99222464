#!/bin/sh
# same-losses.sh DIR: who runs where, then ZeRO-2 on one host and on two.
. "$(dirname "$0")/setup.sh"
sessions() { grep -c 'Accepted publickey for root' "$DS_MH_DIR/sshd_b.log"; }
before=$(sessions)
"$LAUNCH" --hostfile "$DS_MH_HOSTFILE" -- \
  sh -c 'echo "rank $RANK of $WORLD_SIZE on $(hostname), $DS_MARK"' | sort
"$LAUNCH" --num_procs 4 -- "$TRAIN" $TRAIN_ARGS --steps 8 --metrics one.jsonl
"$LAUNCH" --hostfile "$DS_MH_HOSTFILE" -- "$TRAIN" $TRAIN_ARGS --steps 8 \
  --metrics two.jsonl
python3 "$(dirname "$0")/compare.py" one.jsonl two.jsonl
echo "ssh sessions host B's sshd accepted during the launches:" \
  $(($(sessions) - before))
