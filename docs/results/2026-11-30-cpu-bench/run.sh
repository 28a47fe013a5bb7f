#!/usr/bin/env bash
# Reproduces this folder: attnscope bench and the PyTorch peer, side by side, 2 threads, then
# the merged tables. Run from the repository root after building build-bench2 (Release).
# About 6 minutes on a quiet 2-core machine.
set -euo pipefail
out=docs/results/2026-11-30-cpu-bench
bin=build-bench2/tools/attnscope
common=(--threads 2 -r 3)

"$bin" bench --op membw --threads 2 -r 5 -o json > "$out/membw.json"
# Batch 1: prefill pp128, pp512 and decode tg128; attnscope, then PyTorch.
"$bin" bench --attn naive,fused,flash -p 128,512 -n 128 -b 1 "${common[@]}" -o json > "$out/attnscope-b1.json"
python3 tools/peers/torch_bench.py -p 128,512 -n 128 -b 1 "${common[@]}" --output "$out/torch-b1.json"
# Batch 8: pp128 and tg128.
"$bin" bench --attn naive,fused,flash -p 128 -n 128 -b 8 "${common[@]}" -o json > "$out/attnscope-b8.json"
python3 tools/peers/torch_bench.py -p 128 -n 128 -b 8 "${common[@]}" --output "$out/torch-b8.json"
# The attention op alone at the study's shape (B=8, H=16, T=1024, D=64, causal, f32).
"$bin" bench --op attention --attn all "${common[@]}" -o json > "$out/attnscope-attention.json"
python3 tools/peers/torch_bench.py --op attention "${common[@]}" --output "$out/torch-attention.json"

python3 tools/peers/merge.py "$out/attnscope-b1.json" "$out/torch-b1.json" > "$out/model-b1.md"
python3 tools/peers/merge.py "$out/attnscope-b8.json" "$out/torch-b8.json" > "$out/model-b8.md"
python3 tools/peers/merge.py "$out/attnscope-attention.json" "$out/torch-attention.json" > "$out/attention.md"

# A second batch-1 pass (flash against PyTorch) and bandwidth, to see how much the first moved.
"$bin" bench --op membw --threads 2 -r 5 -o json > "$out/membw-2.json"
"$bin" bench --attn flash -p 128,512 -n 128 -b 1 "${common[@]}" -o json > "$out/attnscope-b1-2.json"
python3 tools/peers/torch_bench.py -p 128,512 -n 128 -b 1 "${common[@]}" --output "$out/torch-b1-2.json"
python3 tools/peers/merge.py "$out/attnscope-b1-2.json" "$out/torch-b1-2.json" > "$out/model-b1-2.md"

# After linear's decode path began reading each weight row once for all rows of a batch
# (ops/cpu/linear.cpp), batch 1 and 8 again, side by side (build/ is a Release build).
"build/tools/attnscope" bench --attn flash -p 128 -n 128 -b 1,8 --threads 2 -r 3 -o json > "$out/attnscope-skinny.json"
python3 tools/peers/torch_bench.py -p 128 -n 128 -b 1,8 --threads 2 -r 3 --output "$out/torch-skinny.json"
python3 tools/peers/merge.py "$out/attnscope-skinny.json" "$out/torch-skinny.json" > "$out/model-skinny.md"
