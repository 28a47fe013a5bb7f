#!/usr/bin/env bash
# SmolLM2-135M (Llama shape, GQA 9/3) beside GPT-2 small (MHA 12/12), batch-1 f32 decode, side
# by side in one bench run (repetitions go round the whole grid, so both see the same load),
# with the machine's read bandwidth measured just before and after.
set -euo pipefail
bin=${1:-build/tools/attnscope}
out=$(dirname "$0")
uptime | tee "$out/load.txt"
"$bin" bench --op membw --threads 2 -r 5 --output json > "$out/membw_before.json"
"$bin" bench -m synthetic:gpt2,synthetic:smollm2-135m --attn flash -p 64 -n 128 --threads 2 \
  -r 5 --warmup 1 --output json > "$out/decode.json"
"$bin" bench --op membw --threads 2 -r 5 --output json > "$out/membw_after.json"
uptime | tee -a "$out/load.txt"
