#!/usr/bin/env bash
# SmolLM2-135M's shape (random weights) pp512 f32, 2 threads: attnscope (synthetic:smollm2-135m,
# flash) beside PyTorch + transformers' LlamaForCausalLM (sdpa, last-position logits only), in
# interleaved rounds. Run from the repository root after a Release build. Usage: run.sh [rounds]
set -euo pipefail
out=docs/results/2026-12-01-llama-cpu/pp512
rounds=${1:-3}
uptime | tee "$out/uptime.txt"
for round in $(seq 1 "$rounds"); do
  build/tools/attnscope bench --model synthetic:smollm2-135m -p 512 -n 0 --threads 2 -r 1 \
    --warmup 1 -o json > "$out/attnscope-$round.json" 2>/dev/null
  python3 tools/peers/torch_bench.py --model smollm2-135m --attn sdpa -p 512 -n 0 --threads 2 \
    -r 1 --warmup 1 --output "$out/torch-sdpa-$round.json" 2>/dev/null
  uptime | tee -a "$out/uptime.txt"
done
