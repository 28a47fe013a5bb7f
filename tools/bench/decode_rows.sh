#!/usr/bin/env bash
# Batched decode, two binaries side by side: `bench -b B -p 1 -n 16` (a decode step of B rows)
# for each cpu level and batch, in interleaved rounds (BASE first in odd rounds). Made to find
# where a linear layer's decode kernels and its GEMM cross (ops/cpu/output_blocks.h,
# gemm_min_rows): build NEW with the threshold raised, so that its decode kernels take the rows
# BASE gives the GEMM.
#   tools/bench/decode_rows.sh BASE NEW OUT_DIR [ROUNDS]
#   tools/bench/decode_rows_summary.py OUT_DIR > OUT_DIR/summary.md   (the table)
# Environment: DTYPES (default q8_0), LEVELS (amx avx512vnni), BATCHES (16 32 64).
set -euo pipefail
base=$1 new=$2 out=$3 rounds=${4:-2}
dtypes=${DTYPES:-q8_0} levels=${LEVELS:-amx avx512vnni} batches=${BATCHES:-16 32 64}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  order=(base new); ((round % 2 == 0)) && order=(new base)
  for level in $levels; do
    for batch in $batches; do
      for tool in "${order[@]}"; do
        binary=$base; [[ $tool == new ]] && binary=$new
        ATTNSCOPE_CPU_LEVEL=$level "$binary" bench --model synthetic:gpt2 --dtype "$dtypes" \
          -b "$batch" -p 1 -n 16 -r 2 --warmup 1 -t 2 -o json \
          > "$out/r$round-$level-b$batch-$tool.json" 2>/dev/null
      done
      echo "round $round $level b$batch done" >&2
    done
  done
done
