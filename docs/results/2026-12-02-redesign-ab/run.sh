#!/bin/bash
# CPU speed before and after issue 24's restructuring, side by side: the previous main (BASE)
# and the restructured one (NEW) run in turn, round after round, so drift hits both alike.
#   BASE=/path/to/old/attnscope NEW=/path/to/new/attnscope ROUNDS=5 bash run.sh > ab.txt
# Prints one line per measurement: round side test value; summarize.py makes the ratio table.
set -u
ROUNDS=${ROUNDS:-5}
for round in $(seq 1 "$ROUNDS"); do
  for side in base new; do
    bin=$BASE; [[ $side == new ]] && bin=$NEW
    for model in synthetic:gpt2 synthetic:smollm2-135m; do
      "$bin" bench -m "$model" -p 128 -n 32 --attn flash -r 2 --warmup 1 -o json 2>/dev/null |
        python3 -c "
import json, sys
for r in json.load(sys.stdin)['results']:
    print('$round $side $model:%s %.2f' % (r['test'], r['tokens_per_s_median']))"
    done
    for mode in "" "--decode"; do
      "$bin" bench-attention --attn all --batch 2 --heads 8 --seq-len 512 $mode --reps 5 \
        --output json 2>/dev/null | python3 -c "
import json, sys
for r in json.load(sys.stdin)['results']:
    if r.get('median_ms') is not None:
        print('$round $side attention${mode:+-decode}:%s %.4f' % (r['backend'], r['median_ms']))"
    done
  done
done
