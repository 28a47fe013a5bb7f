#!/usr/bin/env bash
# Two attnscope binaries, BASE and NEW, side by side in interleaved rounds (BASE first in odd
# rounds, NEW first in even ones), each run with its read roof: `bench --dtype
# DTYPES -p PROMPT -n GEN --read-roof` per model, batch and cpu level.
#   tools/bench/ab_bench.sh BASE NEW OUT_DIR [ROUNDS]        (then tools/bench/ab_summary.py OUT_DIR)
# Environment: MODELS (default synthetic:gpt2), BATCHES (1 8), LEVELS (native avx2: native is
# the machine's own cpu level, any other is set as ATTNSCOPE_CPU_LEVEL), PROMPT (0: decode only),
# GEN (64; 0: prefill only), DTYPES (f32,f16,bf16,q8_0).
set -euo pipefail
base=$1 new=$2 out=$3 rounds=${4:-3}
models=${MODELS:-synthetic:gpt2} batches=${BATCHES:-1 8} levels=${LEVELS:-native avx2}
prompt=${PROMPT:-0} gen=${GEN:-64} dtypes=${DTYPES:-f32,f16,bf16,q8_0}
mkdir -p "$out/raw"
for round in $(seq 1 "$rounds"); do
  order=(base new); (( round % 2 == 0 )) && order=(new base)
  for model in $models; do
    name=${model#synthetic:}; name=${name//[^A-Za-z0-9.]/_}
    for level in $levels; do
      level_env=(); [[ $level == native ]] || level_env=(ATTNSCOPE_CPU_LEVEL=$level)
      for tool in "${order[@]}"; do
        binary=$base; [[ $tool == new ]] && binary=$new
        for batch in $batches; do
          env "${level_env[@]}" "$binary" bench -m "$model" --dtype "$dtypes" \
            -b "$batch" -p "$prompt" -n "$gen" -r 2 --warmup 1 -t 2 --read-roof -o json \
            > "$out/raw/round-$round-$name-$level-$tool-b$batch.json" 2>/dev/null
        done
      done
    done
  done
  echo "round $round done"
done
