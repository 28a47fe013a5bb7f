#!/bin/bash
# f32 batch decode at 2 and 3 rows: BASE (main before the change, 16659eb) against NEW, interleaved
# rounds, one line per round and binary: "round side batch tokens/s" (the bench's median of -r 3).
# Usage: BASE=/path/to/old/attnscope NEW=build/tools/attnscope ROUNDS=8 bash run-f32.sh
for round in $(seq 1 "${ROUNDS:-8}"); do
  for side in base new; do
    binary=$BASE; [[ $side == new ]] && binary=$NEW
    "$binary" bench -m synthetic:gpt2 -p 0 -n 32 -b 2,3 --attn flash -r 3 --warmup 1 -o json \
      2>/dev/null | python3 -c "
import json, sys
for r in json.load(sys.stdin)['results']:
    print($round, '$side', 'b%d' % r['batch'], round(r['tokens_per_s_median'], 1))"
  done
done
