#!/usr/bin/env bash
# The attention microbenchmark at the study's shape (B=8, H=16, D=64, causal) for several
# sequence lengths, every backend, one Markdown and one JSON file per length, plus decode.
#
#   tools/bench/attention_sweep.sh OUT_DIR [THREADS] [REPS]
#
# Needs a Release build in build/. At T=2048 naive holds 8 GiB of temporaries.
set -euo pipefail
out=${1:?usage: attention_sweep.sh OUT_DIR [THREADS] [REPS]}
threads=${2:-2}
reps=${3:-5}
binary=${ATTNSCOPE_BINARY:-build/tools/attnscope}
mkdir -p "$out"
for t in 128 512 1024 2048; do
  for format in md json; do
    "$binary" bench-attention --seq-len "$t" --threads "$threads" --reps "$reps" \
      --output "$format" > "$out/prefill-T$t.$format"
  done
done
for format in md json; do
  "$binary" bench-attention --decode --seq-len 1024 --threads "$threads" --reps "$reps" \
    --output "$format" > "$out/decode-T1024.$format"
done
echo "attention_sweep: results in $out"
