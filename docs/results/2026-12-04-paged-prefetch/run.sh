#!/usr/bin/env bash
# The paged flash path with and without the next block's prefetch, two binaries side by side in
# interleaved rounds (BASE first in odd rounds):
#   - the op alone: bench --op attention --attn flash --paged 16 at decode shapes (16 sequences
#     behind 128, 384 and 1024 positions; one behind 1024) and one prefill (4 x 512), GPT-2's
#     12 heads of 64;
#   - the engine: bench --op serving of GPT-2 124M (synthetic, q8_0 and bf16), 32 requests of 256
#     prompt tokens and 128 out at concurrency 1 and 16, and 32 of 768 and 128 at 16.
# Usage: run.sh BASE NEW OUT_DIR [ROUNDS]
set -euo pipefail
base=$1 new=$2 out=$3 rounds=${4:-3}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  order=(base new); ((round % 2 == 0)) && order=(new base)
  for tool in "${order[@]}"; do
    binary=$base; [[ $tool == new ]] && binary=$new
    for shape in "-b 16 --seq-len 128 --decode" "-b 16 --seq-len 384 --decode" \
                 "-b 16 --seq-len 1024 --decode" "-b 1 --seq-len 1024 --decode" \
                 "-b 4 --seq-len 512"; do
      # shellcheck disable=SC2086
      "$binary" bench --op attention --attn flash --paged 16 --heads 12 --head-dim 64 $shape \
        -t 2 -r 20 -o jsonl 2>/dev/null >> "$out/attention-$round-$tool.jsonl"
    done
    for dtype in q8_0 bf16; do
      "$binary" bench --op serving -m synthetic:gpt2 --dtype "$dtype" -c 1,16 --requests 32 \
        --input-len 256 --output-len 128 --seed 1 --threads 2 -r 1 --warmup 0 -o json \
        > "$out/serving-$round-$dtype-$tool.json" 2>/dev/null
    done
    "$binary" bench --op serving -m synthetic:gpt2 --dtype q8_0 -c 16 --requests 32 \
      --input-len 768 --output-len 128 --seed 1 --threads 2 -r 1 --warmup 0 -o json \
      > "$out/serving-long-$round-q8_0-$tool.json" 2>/dev/null
  done
  echo "round $round done" >&2
done
