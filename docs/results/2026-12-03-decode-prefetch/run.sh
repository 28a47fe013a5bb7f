#!/usr/bin/env bash
# BASE against NEW attnscope binaries, decode only, in interleaved rounds (BASE first in odd
# rounds, NEW first in even ones): batch 1 and 8 at every weight type, at the machine's own cpu
# level and at avx2, each round's read roof beside them.
#   docs/results/2026-12-03-decode-prefetch/run.sh BASE NEW OUT_DIR [ROUNDS]
set -euo pipefail
base=$1 new=$2 out=$3 rounds=${4:-3}
mkdir -p "$out/raw"
for round in $(seq 1 "$rounds"); do
  order=(base new); (( round % 2 == 0 )) && order=(new base)
  for level in native avx2; do
    for tool in "${order[@]}"; do
      binary=$base; [[ $tool == new ]] && binary=$new
      for batch in 1 8; do
        level_env=(); [[ $level == native ]] || level_env=(ATTNSCOPE_CPU_LEVEL=$level)
        env "${level_env[@]}" "$binary" bench -m synthetic:gpt2 --dtype f32,f16,bf16,q8_0 -b "$batch" -p 0 -n 64 \
          -r 2 --warmup 1 -t 2 --read-roof -o json \
          > "$out/raw/round-$round-$level-$tool-b$batch.json" 2>/dev/null
      done
    done
  done
  echo "round $round done"
done
