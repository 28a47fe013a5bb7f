#!/usr/bin/env bash
# 16-bit and f32 decode rows: the decode tiles of any row count (tiles129: kGemmMinRows 129)
# against the committed GEMM from 16 rows (gemm16), both levels with AVX-512
set -u
out=/tmp/rows/raw3; mkdir -p $out
for round in 1; do
  for level in amx avx512vnni; do
    for b in 16 24 32 48 64 128; do
      for bin in gemm16 tiles129; do
        ATTNSCOPE_CPU_LEVEL=$level /tmp/attnscope-$bin bench --model synthetic:gpt2 --dtype f32,bf16,f16 -b $b -p 1 -n 16 -r 2 --warmup 1 -t 2 -o json > $out/r$round-$level-b$b-$bin.json 2>/dev/null
      done
      echo "round $round $level b$b done"
    done
  done
done
