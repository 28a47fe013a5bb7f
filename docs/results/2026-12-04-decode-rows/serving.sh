#!/usr/bin/env bash
# The engine's serving benchmark (bench --op serving, as docs/results/2026-12-02-engine/run.sh
# runs it) of synthetic GPT-2 at bf16 and q8_0, concurrency 1 and 16, with the binary before
# (BASE) and after (NEW) this folder's change, in interleaved rounds.
# Usage: serving.sh BASE NEW OUT_DIR [ROUNDS]
set -euo pipefail
base=$1 new=$2 out=$3 rounds=${4:-2}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  order=(base new); ((round % 2 == 0)) && order=(new base)
  for tool in "${order[@]}"; do
    binary=$base; [[ $tool == new ]] && binary=$new
    for dtype in bf16 q8_0; do
      "$binary" bench --op serving -m synthetic:gpt2 --dtype "$dtype" -c 1,16 --requests 64 \
        --input-len 32:128 --output-len 16:64 --seed 1 --threads 2 -r 1 --warmup 0 -o json \
        > "$out/round-$round-$dtype-$tool.json" 2>/dev/null
    done
  done
  echo "round $round done"
done
