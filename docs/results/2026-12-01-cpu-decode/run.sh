#!/usr/bin/env bash
# Issue 15's decode checks after the weight-stream prefetch (ops/cpu/output_blocks.h,
# kWeightPrefetchBytes): synthetic:gpt2 tg128 at batch 1 and tg32 at batch 8 for f32, bf16, f16
# and q8_0 weights, in interleaved rounds (every dtype once per round), between two
# `bench --op membw` runs. Run from the repository root after a Release build in build/.
# Usage: run.sh [rounds] (default 3).
rounds=${1:-3}
source tools/bench/record.sh docs/results/2026-12-01-cpu-decode
record_start
record_membw before
for round in $(seq 1 "$rounds"); do
  for dtype in f32 bf16 f16 q8_0; do
    "$bin" bench -p 0 -n 128 -b 1 --dtype "$dtype" --threads 2 -r 1 --warmup 1 -o jsonl \
      >> "$out/raw/tg128-b1.jsonl" 2>/dev/null
    "$bin" bench -p 0 -n 32 -b 8 --dtype "$dtype" --threads 2 -r 1 --warmup 1 -o jsonl \
      >> "$out/raw/tg32-b8.jsonl" 2>/dev/null
  done
  record_uptime
done
record_membw after
record_uptime
