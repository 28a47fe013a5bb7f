#!/usr/bin/env bash
# bf16 prefill at the amx level against the avx512vnni level (the f32 GEMM over widened weights),
# one binary, ATTNSCOPE_CPU_LEVEL choosing, in interleaved rounds whose order flips each round.
# Usage: docs/results/2026-12-04-amx-prefill/run.sh [ROUNDS]   (from the repository root)
set -euo pipefail
here=$(dirname "$0")
rounds=${1:-5}
for round in $(seq 1 "$rounds"); do
  levels=(amx avx512vnni)
  ((round % 2 == 0)) && levels=(avx512vnni amx)
  for model in gpt2 smollm2-135m llama-3.2-1b; do
    reps=3
    [[ $model == llama-3.2-1b ]] && reps=1
    for level in "${levels[@]}"; do
      ATTNSCOPE_CPU_LEVEL=$level build/tools/attnscope bench --model "synthetic:$model" \
        --dtype bf16 -p 512 -n 0 -r "$reps" --warmup 1 -t 2 -o json \
        >"$here/raw/round-$round-$model-$level.json"
    done
  done
done
python3 - "$here" <<'PY'
import json, pathlib, statistics, sys
here = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted((here / "raw").glob("round-*.json")):
    _, rnd, rest = f.stem.split("-", 2)
    model, level = rest.rsplit("-", 1)
    rate = json.loads(f.read_text())["results"][0]["tokens_per_s_median"]
    rows.setdefault(model, {}).setdefault(int(rnd), {})[level] = rate
print("| model (bf16, pp512, 2 threads) | avx512vnni tokens/s | amx tokens/s | amx / avx512vnni, median (min-max) |")
print("| --- | ---: | ---: | ---: |")
for model, by_round in rows.items():
    base = [r["avx512vnni"] for r in by_round.values()]
    amx = [r["amx"] for r in by_round.values()]
    ratios = [r["amx"] / r["avx512vnni"] for r in by_round.values()]
    print(f"| {model} | {statistics.median(base):.0f} | {statistics.median(amx):.0f} | "
          f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")
PY
