#!/usr/bin/env bash
# Reproduces this folder's timings: attnscope pp512 with f32, bf16 and f16 weights and the
# PyTorch peer (transformers, sdpa, last-position logits), 2 threads, interleaved in rounds so
# that the machine's load drifts over all of them alike. Run from the repository root after a
# Release build in build/. Usage: run.sh [rounds] (default 6).
rounds=${1:-6}
source tools/bench/record.sh docs/results/2026-12-01-cpu-prefill
uptime | tee "$out/uptime-start.txt"
for round in $(seq 1 "$rounds"); do
  for dtype in f32 bf16 f16; do
    "$bin" bench --model synthetic:gpt2 -p 512 -n 0 -b 1 --dtype "$dtype" --threads 2 -r 1 \
      --warmup 1 -o json > "$out/raw/attnscope-$dtype-$round.json"
  done
  python3 tools/peers/torch_bench.py --attn sdpa -p 512 -n 0 -b 1 --threads 2 -r 1 --warmup 1 \
    --output "$out/raw/torch-sdpa-$round.json"
  uptime
done | tee "$out/uptime-rounds.txt"
