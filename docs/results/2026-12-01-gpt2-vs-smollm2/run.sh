#!/usr/bin/env bash
# Issue 14's comparison: attention's share and the backends' ranking in GPT-2 small (124M, 12
# heads of 64, multi-head attention, learned positions, context 1024) beside SmolLM2-135M (9 query
# heads sharing 3 key/value heads of 64, RoPE, context 8192), both synthetic (random weights, real
# shapes), f32 on the CPU. GPT-2 cannot take 2048 tokens, so it runs at 512 and 1016 (1024 less the 8 decode steps); SmolLM2 at
# 512 and 2048. Run from the repository root after a Release build in build/.
# Usage: run.sh [rounds] (default 3).
set -euo pipefail
out=docs/results/2026-12-01-gpt2-vs-smollm2
bin=build/tools/attnscope
rounds=${1:-3}
git rev-parse --short HEAD > "$out/revision.txt"
"$bin" compare --model synthetic:gpt2 --prompt-lens 512,1016 --gen 8 --reps "$rounds" \
  --threads 2 --out "$out/gpt2"
"$bin" compare --model synthetic:smollm2-135m --prompt-lens 512,2048 --gen 8 --reps "$rounds" \
  --threads 2 --out "$out/smollm2-135m"
