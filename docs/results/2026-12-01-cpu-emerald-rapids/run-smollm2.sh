#!/usr/bin/env bash
# Issue 14's speed checks on this machine: synthetic:smollm2-135m batch-1 f32 decode (tg128)
# against `bench --op membw`, and pp512 in f32 beside PyTorch + transformers' LlamaForCausalLM
# (tools/peers/torch_bench.py --model smollm2-135m, last-position logits, sdpa and eager), in
# interleaved rounds. Run from the repository root after a Release build in build/, with the
# peer's Python (torch, transformers) as $PYTHON.
# Usage: PYTHON=/path/to/python run-smollm2.sh [rounds] (default 5).
rounds=${1:-5}
source tools/bench/record.sh docs/results/2026-12-01-cpu-emerald-rapids
rm -f "$out"/raw/smollm2-*.jsonl
uptime | tee "$out/uptime-smollm2.txt"
"$bin" bench --op membw -r 5 -o jsonl > "$out/raw/smollm2-membw-before.jsonl" 2>/dev/null
for round in $(seq 1 "$rounds"); do
  "$bin" bench -m synthetic:smollm2-135m -p 0 -n 128 -b 1 --dtype f32 --threads 2 -r 1 --warmup 1 \
    -o jsonl >> "$out/raw/smollm2-tg128-b1.jsonl" 2>/dev/null
  "$bin" bench -m synthetic:smollm2-135m -p 512 -n 0 -b 1 --dtype f32 --attn flash,naive \
    --threads 2 -r 1 --warmup 1 -o jsonl >> "$out/raw/smollm2-pp512-attnscope.jsonl" 2>/dev/null
  "$python" tools/peers/torch_bench.py --model smollm2-135m --threads 2 -p 512 -n 0 -r 1 \
    --warmup 1 2>/dev/null |
    results_as_lines >> "$out/raw/smollm2-pp512-torch.jsonl"
  uptime | tee -a "$out/uptime-smollm2.txt"
done
"$bin" bench --op membw -r 5 -o jsonl > "$out/raw/smollm2-membw-after.jsonl" 2>/dev/null
