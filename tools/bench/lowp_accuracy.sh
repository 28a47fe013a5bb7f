#!/usr/bin/env bash
# Regenerates docs/results/2026-12-01-cpu-lowp-accuracy: for each narrow cpu weight dtype (bf16,
# f16, q8_0) against f32, the KL divergence of the next-token distributions and the top-1
# agreement over a long text, with `attnscope perplexity --save-logits` (f32 baseline) then
# `--kl-divergence` (each dtype). Each case runs twice: with windows of >= 16 positions (the
# prefill path: f32 activations times the narrow weights) and with windows of 15 (the decode
# path: for q8_0 the activations are quantized to 8 bits too, ops/cpu/linear_q8_0.h); the decode
# path runs on tiny-a only (on synthetic:gpt2 each 15-token window streams all 0.5 GB of weights).
# Writes one JSON per run into OUT_DIR and prints the table (tools/bench/lowp_accuracy_table.py).
#
# Usage: tools/bench/lowp_accuracy.sh ATTNSCOPE GPT2_TOKENIZER_DIR OUT_DIR [THREADS]
#   THREADS (default 2) for synthetic:gpt2; the tiny fixtures run on one thread (starting a team
#   of threads costs more than their windows' work).
#   GPT2_TOKENIZER_DIR: GPT-2's vocab.bpe + encoder.json (for synthetic:gpt2).
# Cost: tiny-a scores the whole of docs/ARCHITECTURE.md (~8k tokens, seconds); synthetic:gpt2
# its first 3000 bytes (~700 tokens; the f32 baseline is tokens x 50257 x 4 bytes in a temp dir).
set -euo pipefail
attnscope=$1
gpt2_tokenizer=$2
out=$3
threads=${4:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
head -c 3000 "$root/docs/ARCHITECTURE.md" > "$scratch/short.txt"
mkdir -p "$out"

# run NAME MODEL TOKENIZER TEXT CTX STRIDE THREADS DTYPES...
run() {
  local name=$1 model=$2 tokenizer=$3 text=$4 ctx=$5 stride=$6 team=$7
  shift 7
  local common=(perplexity --model "$model" --tokenizer "$tokenizer" --file "$text" --ctx "$ctx"
                --stride "$stride" --threads "$team" --json)
  "$attnscope" "${common[@]}" --save-logits "$scratch/$name.npy" > "$out/$name-f32.json"
  for dtype in "$@"; do
    "$attnscope" "${common[@]}" --dtype "$dtype" --kl-divergence "$scratch/$name.npy" \
      > "$out/$name-$dtype.json" || echo "{\"refused\": true, \"dtype\": \"$dtype\"}" > "$out/$name-$dtype.json"
  done
  rm -f "$scratch/$name.npy"
}

fixtures=$root/tests/fixtures/hf
run tiny-a-ctx64 "$fixtures/tiny-a" "$fixtures/perplexity" "$root/docs/ARCHITECTURE.md" 64 32 1 bf16 f16 q8_0
run tiny-a-ctx15 "$fixtures/tiny-a" "$fixtures/perplexity" "$root/docs/ARCHITECTURE.md" 15 8 1 bf16 f16 q8_0
# tiny-b's MLP is 200 wide: q8_0 refuses it (rows must be whole blocks of 32).
run tiny-b-ctx48 "$fixtures/tiny-b" "$fixtures/perplexity" "$root/docs/ARCHITECTURE.md" 48 24 1 bf16 f16 q8_0
run gpt2-ctx256 synthetic:gpt2 "$gpt2_tokenizer" "$scratch/short.txt" 256 128 "$threads" bf16 f16 q8_0
python3 "$root/tools/bench/lowp_accuracy_table.py" "$out"
