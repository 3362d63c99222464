#!/bin/sh
# Runs one checkpoint-save fault inside a private mount namespace (the
# caller: unshare -m --propagation private), so the tmpfs it mounts goes
# away with it. Usage: save-faults.sh full|continue|sync|readonly WORK INPUTS
set -u
mode=$1 work=$2 inputs=$3
train="ds-train --model $inputs/gpt-1layer.json --config $inputs/sgd.json --synthetic --quiet"
rm -rf "$work" && mkdir -p "$work/fs"

# The size of one shard, measured on the ordinary disk: the tmpfs holds
# 1.6 of them, so the first save (shard, manifest, `latest`) fits and the
# second shard runs out of room.
$train --steps 1 --save "$work/probe" >/dev/null || exit 1
bytes=$(stat -c %s "$work/probe/global_step1/rank0.safetensors")
mount -t tmpfs -o size=$((bytes * 8 / 5)) tmpfs "$work/fs" || exit 1
ck=$work/fs/ck

case $mode in
full) $train --steps 3 --save "$ck" --save-interval 1 ;;
sync) $train --steps 3 --save "$ck" --save-interval 1 --save-sync ;;
continue) $train --steps 3 --save "$ck" --save-interval 1 \
            --on-save-error continue ;;
readonly)
  $train --steps 1 --save "$ck" || exit 1
  mount -o remount,ro "$work/fs" || exit 1
  $train --steps 2 --load "$ck" --save "$ck" ;;
esac
echo "exit status $?"
echo "latest: $(cat "$ck/latest")"
ds-ckpt verify "$ck"
echo "left over: $(cd "$ck" && find . -name '*.tmp' -o -name 'global_step[2-9]' | sort | tr '\n' ' ')"
