#!/usr/bin/env bash
# Issue 26's measurements on the CPU: the serving benchmark (bench --op serving) of GPT-2 124M
# and SmolLM2-135M shapes at concurrency 1, 4, 16 and 64 (1 = the same requests one at a time),
# the KV waste of the paged cache against a contiguous reservation, a shared-prefix workload for
# prefix caching, and the cost of paging to each attention backend (bench-attention --paged
# against the contiguous call, prefill and decode, blocks of 16). Run from the repository root
# after a Release build in build/. Usage: run.sh [repetitions] (default 3).
reps=${1:-3}
source tools/bench/record.sh docs/results/2026-12-02-engine
record_start
workload=(--requests 64 --input-len 32:128 --output-len 16:64 --seed 1)
for model in synthetic:gpt2 synthetic:smollm2-135m; do
  name=${model#synthetic:}
  "$bin" bench --op serving -m "$model" -c 1,4,16,64 "${workload[@]}" --threads 2 \
    -r "$reps" --warmup 0 -o json > "$out/raw/serving-$name.json"
  record_uptime
done
# Prefix caching: every prompt starts with the same 96 tokens (6 blocks of 16).
"$bin" bench --op serving -m synthetic:gpt2 -c 16 --requests 64 --input-len 112:128 \
  --output-len 16:64 --shared-prefix 96 --seed 1 --threads 2 -r "$reps" --warmup 0 -o json \
  > "$out/raw/serving-gpt2-shared-prefix.json"
record_uptime
# The cost of paging: GPT-2's attention shape (12 heads of 64) for 8 sequences, contiguous and
# through blocks of 16 in a random order.
for paged in 0 16; do
  "$bin" bench-attention --batch 8 --heads 12 --seq-len 512 --head-dim 64 --reps 7 \
    --threads 2 --paged "$paged" --output json > "$out/raw/attention-prefill-paged$paged.json"
  "$bin" bench-attention --batch 8 --heads 12 --seq-len 1024 --head-dim 64 --decode --reps 15 \
    --threads 2 --paged "$paged" --output json > "$out/raw/attention-decode-paged$paged.json"
done
record_uptime
