#!/usr/bin/env bash
# The quiet-machine rerun of issue 15's speed checks, side by side in one run: pp512 with f32,
# bf16, f16 and q8_0 weights beside PyTorch (transformers GPT-2, sdpa, last-position logits only)
# in interleaved rounds, then tg128 of every dtype between two `bench --op membw` runs.
# Run from the repository root after a Release build in build/. Usage: run.sh [rounds] (default 3).
rounds=${1:-3}
source tools/bench/record.sh docs/results/2026-12-01-cpu-quiet
uptime | tee "$out/uptime.txt"
for round in $(seq 1 "$rounds"); do
  for dtype in f32 bf16 f16 q8_0; do
    "$bin" bench --model synthetic:gpt2 -p 512 -n 0 -b 1 --dtype "$dtype" --threads 2 -r 1 \
      --warmup 1 -o json > "$out/raw/pp512-$dtype-$round.json" 2>/dev/null
  done
  python3 tools/peers/torch_bench.py --attn sdpa -p 512 -n 0 -b 1 --threads 2 -r 1 --warmup 1 \
    --output "$out/raw/pp512-torch-sdpa-$round.json" 2>/dev/null
  record_uptime
done
record_membw before
"$bin" bench --dtype f32,bf16,f16,q8_0 -p 0 -n 128 -r 5 -o jsonl > "$out/raw/tg128.jsonl" 2>/dev/null
record_membw after
record_uptime
