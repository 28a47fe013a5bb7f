#!/usr/bin/env bash
# Issue 15 on a new machine class (Xeon, CPUID family 6 model 207: Emerald Rapids; 2 cores,
# AVX-512 with VNNI and BF16): synthetic:gpt2 batch-1 decode (tg128) for every weight dtype,
# q8_0 at both AVX-512 levels (avx512vnni, the default here, and avx512 by ATTNSCOPE_CPU_LEVEL),
# and pp512 in f32 beside PyTorch + transformers (tools/peers/torch_bench.py, last-position
# logits, sdpa and eager), in interleaved rounds between two `bench --op membw` runs; then one
# profile of pp512. Run from the repository root after a Release build in build/, with the
# peer's Python (torch, transformers) as $PYTHON.
# Usage: PYTHON=/path/to/python run.sh [rounds] (default 5).
rounds=${1:-5}
source tools/bench/record.sh docs/results/2026-12-01-cpu-emerald-rapids
rm -f "$out"/raw/*.jsonl
record_start
record_membw before
for round in $(seq 1 "$rounds"); do
  for dtype in f32 bf16 f16 q8_0; do
    "$bin" bench -p 0 -n 128 -b 1 --dtype "$dtype" --threads 2 -r 1 --warmup 1 -o jsonl \
      >> "$out/raw/tg128-b1.jsonl" 2>/dev/null
  done
  ATTNSCOPE_CPU_LEVEL=avx512 "$bin" bench -p 0 -n 128 -b 1 --dtype q8_0 --threads 2 -r 1 \
    --warmup 1 -o jsonl >> "$out/raw/tg128-b1-q8_0-avx512.jsonl" 2>/dev/null
  "$bin" bench -p 512 -n 0 -b 1 --dtype f32 --attn flash,naive --threads 2 -r 1 --warmup 1 \
    -o jsonl >> "$out/raw/pp512-attnscope.jsonl" 2>/dev/null
  "$python" tools/peers/torch_bench.py --threads 2 -p 512 -n 0 -r 1 --warmup 1 2>/dev/null |
    results_as_lines >> "$out/raw/pp512-torch.jsonl"
  record_uptime
done
record_membw after
"$bin" profile --model synthetic:gpt2 --prompt-len 512 --gen 0 --steps prefill --attn flash \
  --threads 2 > "$out/profile-pp512-f32.txt" 2>&1
record_uptime
