#!/usr/bin/env bash
# The avx2 batch-decode tiles on a CPU without AVX-512 (ops/cpu/dot_tile.h,
# matrix_vector_tiles_avx2), measured side by side: decode at batch 1-32 of BASE (the revision
# before them: Eigen's dot products below 16 rows, Eigen's GEMM from 16) and NEW in interleaved
# rounds; then the serving benchmark of docs/results/2026-12-02-engine/ again with NEW.
# Run from the repository root. Usage: run.sh BASE_BINARY [NEW_BINARY] [rounds] (NEW default:
# build/tools/attnscope; rounds default 3).
base=${1:?usage: run.sh BASE_BINARY [NEW_BINARY] [rounds]}
source tools/bench/record.sh docs/results/2026-12-02-engine-avx2
bin=${2:-$bin}
rounds=${3:-3}
record_start
for round in $(seq 1 "$rounds"); do
  for which in base new; do
    binary=$bin
    [[ $which == base ]] && binary=$base
    "$binary" bench -m synthetic:gpt2 -p 0 -n 16 -d 32 -b 1,4,8,16,32 --threads 2 -r 1 \
      --warmup 1 -o jsonl 2>/dev/null | sed "s/^{/{\"binary\":\"$which\",/" >> "$out/raw/decode.jsonl"
  done
  record_uptime
done
workload=(--requests 64 --input-len 32:128 --output-len 16:64 --seed 1)
for model in synthetic:gpt2 synthetic:smollm2-135m; do
  "$bin" bench --op serving -m "$model" -c 1,4,16,64 "${workload[@]}" --threads 2 \
    -r "$rounds" --warmup 0 -o json > "$out/raw/serving-${model#synthetic:}.json"
  record_uptime
done
