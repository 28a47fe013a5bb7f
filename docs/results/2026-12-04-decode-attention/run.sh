#!/usr/bin/env bash
# Decode behind a filled cache, two binaries side by side: `bench -b 1,16 -p 1 -n 16 -d
# 128,512,960` (16 decode steps of 1 or 16 sequences behind that many cached tokens) of
# synthetic GPT-2 at q8_0 and bf16, in interleaved rounds (BASE first in odd rounds); then flash's
# time per layer from `profile --batch 16 --prompt-len 512` of each.
#   run.sh BASE NEW OUT_DIR [ROUNDS]
set -euo pipefail
base=$1 new=$2 out=$3 rounds=${4:-3}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  order=(base new); ((round % 2 == 0)) && order=(new base)
  for tool in "${order[@]}"; do
    binary=$base; [[ $tool == new ]] && binary=$new
    "$binary" bench -m synthetic:gpt2 --dtype q8_0,bf16 -b 1,16 -p 1 -n 16 -d 128,512,960 \
      -r 2 -t 2 -o json > "$out/round-$round-$tool.json" 2>/dev/null
    "$binary" profile -m synthetic:gpt2 --dtype q8_0 --batch 16 --prompt-len 512 --gen 8 \
      --steps decode -t 2 --json "$out/profile-$round-$tool.json" > /dev/null 2>&1
  done
  echo "round $round done" >&2
done
