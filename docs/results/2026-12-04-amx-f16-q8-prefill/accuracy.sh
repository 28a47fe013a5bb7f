#!/usr/bin/env bash
# The amx level's f16 and q8_0 prefill against the avx512vnni level's (the f32 GEMM over widened or
# dequantized weights), end to end: `perplexity` on README.md's text with synthetic GPT-2 weights,
# the avx512vnni run's logits saved and the amx run compared with them (KL divergence, top-1
# agreement, largest logit difference). For scale, the same comparison of each storage type
# against f32 weights. Usage, from the repository root:
#   docs/results/2026-12-04-amx-f16-q8-prefill/accuracy.sh > docs/results/2026-12-04-amx-f16-q8-prefill/accuracy.jsonl
set -euo pipefail
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
run() {  # LEVEL DTYPE then perplexity's own flags
  local level=$1 dtype=$2
  shift 2
  ATTNSCOPE_CPU_LEVEL=$level build/tools/attnscope perplexity -m synthetic:gpt2 -f README.md \
    --ctx 512 --dtype "$dtype" -t 2 --json "$@"
}
run avx512vnni f32 --save-logits "$scratch/f32.npy" >/dev/null
for dtype in f16 q8_0; do
  run avx512vnni "$dtype" --save-logits "$scratch/$dtype.npy" >/dev/null
  echo "{\"compare\": \"$dtype amx against $dtype avx512vnni\", \"result\": $(run amx "$dtype" --kl-divergence "$scratch/$dtype.npy")}"
  echo "{\"compare\": \"$dtype avx512vnni against f32\", \"result\": $(run avx512vnni "$dtype" --kl-divergence "$scratch/f32.npy")}"
done
