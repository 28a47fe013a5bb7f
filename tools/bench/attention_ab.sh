#!/usr/bin/env bash
# Two attnscope binaries' attention backend side by side in interleaved rounds (BASE first in odd
# rounds): the op alone at several shapes, then the engine serving, whose prefill chunks and
# decode steps run the backend's paged path.
#   tools/bench/attention_ab.sh BASE NEW OUT_DIR [ROUNDS]   (then attention_ab_summary.py OUT_DIR)
# Environment:
#   ATTN     the backend (flash)
#   SHAPES   ';'-separated `bench --op attention` shape flags, each a case (default: the study's
#            shape, GPT-2's 12 heads of 64 at T = 512, 8 heads of 128 at T = 1024, a paged prefill
#            in blocks of 16, and a paged decode of 16 sequences behind 512 positions)
#   SERVING  weight types of `bench --op serving` on synthetic GPT-2, 32 requests of 256 prompt
#            tokens and 128 out at concurrency 1 and 16 (default "q8_0 bf16"; empty: none)
#   BASE_SERVING_FLAGS, NEW_SERVING_FLAGS  more flags for one side's serving runs, to compare
#            one binary against itself with an option (BASE and NEW the same path), e.g.
#            NEW_SERVING_FLAGS="--kv-dtype bf16"
#   BASE_ATTENTION_FLAGS, NEW_ATTENTION_FLAGS  the same for one side's op-alone runs, e.g.
#            NEW_ATTENTION_FLAGS="--bf16-products"
set -euo pipefail
base=$1 new=$2 out=$3 rounds=${4:-3}
attn=${ATTN:-flash}
default_shapes="-b 8 --heads 16 --seq-len 1024 --head-dim 64;-b 1 --heads 12 --seq-len 512 --head-dim 64"
default_shapes+=";-b 1 --heads 8 --seq-len 1024 --head-dim 128"
default_shapes+=";-b 4 --heads 12 --seq-len 256 --head-dim 64 --paged 16"
default_shapes+=";-b 16 --heads 12 --seq-len 512 --head-dim 64 --decode --paged 16"
IFS=';' read -r -a shapes <<< "${SHAPES:-$default_shapes}"
serving=${SERVING-q8_0 bf16}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  order=(base new); ((round % 2 == 0)) && order=(new base)
  for tool in "${order[@]}"; do
    binary=$base; [[ $tool == new ]] && binary=$new
    flags=${BASE_ATTENTION_FLAGS:-}; [[ $tool == new ]] && flags=${NEW_ATTENTION_FLAGS:-}
    for shape in "${shapes[@]}"; do
      # shellcheck disable=SC2086
      "$binary" bench --op attention --attn "$attn" $shape $flags -t 2 -r 10 -o jsonl \
        2>/dev/null >> "$out/attention-$round-$tool.jsonl"
    done
    extra=${BASE_SERVING_FLAGS:-}; [[ $tool == new ]] && extra=${NEW_SERVING_FLAGS:-}
    for dtype in $serving; do
      # shellcheck disable=SC2086
      "$binary" bench --op serving -m synthetic:gpt2 --attn "$attn" --dtype "$dtype" -c 1,16 \
        --requests 32 --input-len 256 --output-len 128 --seed 1 --threads 2 -r 1 --warmup 0 \
        -o json $extra > "$out/serving-$round-$dtype-$tool.json" 2>/dev/null
    done
  done
  echo "round $round done" >&2
done
