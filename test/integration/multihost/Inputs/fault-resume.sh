#!/bin/sh
# fault-resume.sh DIR kill:RANK|cut: an uninterrupted 40-step run; the same
# run (saving every 2 steps) meeting the fault after step 5; then a relaunch
# with --load from the last committed checkpoint, whose losses must continue
# those of the uninterrupted run exactly.
. "$(dirname "$0")/setup.sh"
fault=$2
"$LAUNCH" --hostfile "$DS_MH_HOSTFILE" -- "$TRAIN" $TRAIN_ARGS --steps 40 \
  --metrics straight.jsonl
# A 5 s communication timeout: a rank cut off from its peers gives up in
# time, naming them. Never hangs: fault.py fails past its limit.
python3 "$(dirname "$0")/fault.py" --fault "$fault" --after-step 5 \
  --dir "$T" --limit 30 -- \
  "$LAUNCH" --hostfile "$DS_MH_HOSTFILE" \
  --launcher_args "-x DSRT_COMM_TIMEOUT_S=5" -- \
  "$TRAIN" $TRAIN_ARGS --steps 1000 --metrics "$T/m.jsonl" --save ck \
  --save-interval 2
if [ "$fault" = cut ]; then
  # What each host's ranks said, from their own stderr (host B's never
  # reaches the launcher over the cut link). Per host, not per rank: both
  # ranks of a host time out together, and mpirun ends the slower one once
  # the first has failed, sometimes before its own report. A rank naming
  # other peers shows as a second line.
  for host in "a 0 1" "b 2 3"; do
    set -- $host
    echo "host $1: $(cat err.$2 err.$3 | grep -o 'world rank.*did not answer' |
      sort -u | paste -sd '|')"
  done
  ip link set "$DS_MH_IF" up
fi
echo "last committed: $(cat ck/latest)"
"$LAUNCH" --hostfile "$DS_MH_HOSTFILE" -- "$TRAIN" $TRAIN_ARGS --steps 40 \
  --load ck --metrics resumed.jsonl
python3 "$SRC/test/Checkpoint/Inputs/losses.py" straight.jsonl resumed.jsonl \
  --grad-norm
