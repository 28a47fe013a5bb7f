#!/bin/bash
for round in 1 2 3 4; do
  for side in base main; do
    for dt in f32 bf16; do
      /work/$side/build/tools/attnscope bench -m synthetic:gpt2 -p 0 -n 32 -b 2,3 --dtype $dt --attn flash -r 2 --warmup 1 -o json 2>/dev/null | python3 -c "
import json,sys; j=json.load(sys.stdin)
for r in j['results']: print('$round $side $dt b%d %.1f' % (r['batch'], r['tokens_per_s_median']))"
    done
  done
done
