#!/usr/bin/env bash
set -u
out=/tmp/rows/raw2; mkdir -p $out
for round in 1 2; do
  for level in amx avx512vnni avx2; do
    for b in 64 96 128; do
      order="gemm16 rows129"; ((round % 2 == 0)) && order="rows129 gemm16"
      for bin in $order; do
        ATTNSCOPE_CPU_LEVEL=$level /tmp/attnscope-$bin bench --model synthetic:gpt2 --dtype q8_0 -b $b -p 1 -n 16 -r 2 --warmup 1 -t 2 -o json > $out/r$round-$level-b$b-$bin.json 2>/dev/null
      done
      echo "round $round $level b$b done"
    done
  done
done
