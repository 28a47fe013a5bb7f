#!/usr/bin/env bash
# Two attnscope binaries serving the same workload through the engine in alternated rounds (BASE
# first in odd rounds), each run traced, to see which ops a change moved:
#   tools/bench/serving_ab.sh BASE NEW OUT_DIR ROUNDS [more bench flags, e.g. --kv-dtype bf16]
#   tools/bench/serving_ab_summary.py OUT_DIR [OP ...] > OUT_DIR/summary.md
# Each run: `bench --op serving -m synthetic:gpt2 --requests 32 -c 16 -r 1 --warmup 1 -o json
# --trace`, its JSON in OUT_DIR/rR-TOOL.json and its Chrome trace in OUT_DIR/rR-TOOL-trace.json
# (8-17 MB each: summarize, then delete them rather than commit them).
set -euo pipefail
base=$1 new=$2 out=$3 rounds=$4
shift 4
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  order=(base new); ((round % 2 == 0)) && order=(new base)
  for tool in "${order[@]}"; do
    binary=$base; [[ $tool == new ]] && binary=$new
    "$binary" bench --op serving -m synthetic:gpt2 --requests 32 -c 16 -r 1 --warmup 1 -o json \
      --trace "$out/r$round-$tool-trace.json" "$@" > "$out/r$round-$tool.json" 2>/dev/null
  done
  echo "round $round done" >&2
done
