#!/usr/bin/env bash
# Issues 14 and 15 on a Zen 5 EPYC (2 cores, AVX-512 with VNNI and BF16): in interleaved rounds,
# each with a `bench --op membw` of its own (this machine's bandwidth moved by 1.6x within the
# session), synthetic:gpt2 decode (tg128) at batch 1 for every weight dtype and at batch 8 (also
# with the previous revision's binary, $BASELINE: main before ops/cpu/gemm.cpp and
# ops/cpu/dot_tile.h, 8f30ea7), pp512 for every weight dtype, pp512 in f32 with $BASELINE
# (Eigen's GEMM) and beside PyTorch + transformers
# (tools/peers/torch_bench.py, last-position logits, sdpa and eager); then synthetic:smollm2-135m
# f32 decode and pp512, the same three ways. Run from the repository root after a Release build
# in build/, with the peer's Python (torch, transformers) as $PYTHON.
# Usage: PYTHON=/path/to/python BASELINE=/path/to/attnscope-8f30ea7 run.sh [rounds] (default 5).
rounds=${1:-5}
baseline=${BASELINE:?BASELINE must name an attnscope binary built at the previous revision}
source tools/bench/record.sh docs/results/2026-12-01-cpu-zen5
rm -f "$out"/raw/*.jsonl
record_start
# bench -o jsonl appends one line per configuration; torch_bench.py prints one JSON document.
bench() { "$1" bench "${@:3}" --threads 2 -r 1 --warmup 1 -o jsonl >> "$out/raw/$2.jsonl" 2>/dev/null; }
torch() {
  "$python" tools/peers/torch_bench.py "${@:2}" --threads 2 -r 1 --warmup 1 2>/dev/null |
    results_as_lines >> "$out/raw/$1.jsonl"
}
for round in $(seq 1 "$rounds"); do
  "$bin" bench --op membw -r 3 -o jsonl >> "$out/raw/membw.jsonl" 2>/dev/null
  bench "$bin" gpt2-tg128-b1 -p 0 -n 128 -b 1 --dtype f32,bf16,f16,q8_0
  bench "$bin" gpt2-tg128-b8 -p 0 -n 128 -b 8 --dtype f32,bf16,q8_0
  bench "$baseline" gpt2-tg128-b8-baseline -p 0 -n 128 -b 8 --dtype f32,bf16,q8_0
  bench "$bin" gpt2-pp512 -p 512 -n 0 --dtype f32,bf16,f16,q8_0
  bench "$baseline" gpt2-pp512-baseline -p 512 -n 0 --dtype f32
  torch gpt2-pp512-torch -p 512 -n 0
  bench "$bin" smollm2-tg128-b1 -m synthetic:smollm2-135m -p 0 -n 128 -b 1 --dtype f32
  bench "$bin" smollm2-pp512 -m synthetic:smollm2-135m -p 512 -n 0 --dtype f32
  bench "$baseline" smollm2-pp512-baseline -m synthetic:smollm2-135m -p 512 -n 0 --dtype f32
  torch smollm2-pp512-torch --model smollm2-135m -p 512 -n 0
  record_uptime
done
"$bin" bench --op membw -r 3 -o jsonl >> "$out/raw/membw.jsonl" 2>/dev/null
"$bin" profile --model synthetic:gpt2 --prompt-len 512 --gen 0 --steps prefill --attn flash \
  --threads 2 > "$out/profile-pp512-f32.txt" 2>&1
