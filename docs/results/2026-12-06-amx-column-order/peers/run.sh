#!/usr/bin/env bash
# bf16 pp512 of attnscope against PyTorch (transformers, sdpa attention, bf16 throughout) on the
# same synthetic shapes with random weights, in interleaved rounds whose order flips each round.
# Usage (from the repository root): docs/results/2026-12-06-amx-column-order/peers/run.sh PYTHON [ROUNDS]
# PYTHON has torch and transformers (tools/peers/README.md). SUMMARY_ONLY=1: the table from raw/ alone.
set -euo pipefail
here=$(dirname "$0")
python=$1 rounds=${2:-5}
mkdir -p "$here/raw"
for round in $(seq 1 "$rounds"); do
  [[ ${SUMMARY_ONLY:-} ]] && break
  tools=(attnscope torch)
  ((round % 2 == 0)) && tools=(torch attnscope)
  for model in gpt2 smollm2-135m; do
    for tool in "${tools[@]}"; do
      out="$here/raw/round-$round-$model-$tool.json"
      if [[ $tool == attnscope ]]; then
        build/tools/attnscope bench --model "synthetic:$model" --dtype bf16 -p 512 -n 0 -r 3 \
          --warmup 1 -t 2 -o json >"$out"
      else
        "$python" tools/peers/torch_bench.py --model "$model" --attn sdpa --dtype bf16 -p 512 \
          -n 0 -r 3 --warmup 1 --threads 2 --output "$out"
      fi
    done
  done
  echo "round $round done" >&2
done
python3 - "$here" <<'PY'
import json, pathlib, statistics, sys
here = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted((here / "raw").glob("round-*.json")):
    _, rnd, rest = f.stem.split("-", 2)
    model, tool = rest.rsplit("-", 1)
    rate = statistics.median(json.loads(f.read_text())["results"][0]["samples_tokens_per_s"])
    rows.setdefault(model, {}).setdefault(int(rnd), {})[tool] = rate
print("| model (bf16, pp512, 2 threads) | attnscope tokens/s | PyTorch tokens/s | attnscope / PyTorch, median (min-max) |")
print("| --- | ---: | ---: | ---: |")
for model, by_round in rows.items():
    ours = [r["attnscope"] for r in by_round.values()]
    theirs = [r["torch"] for r in by_round.values()]
    ratios = [r["attnscope"] / r["torch"] for r in by_round.values()]
    print(f"| {model} | {statistics.median(ours):.0f} | {statistics.median(theirs):.0f} | "
          f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")
PY
