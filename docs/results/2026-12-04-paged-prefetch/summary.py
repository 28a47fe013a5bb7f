#!/usr/bin/env python3
"""The tables of run.sh's rounds: per case, each binary's per-round figures and the median (min-max)
of the per-round ratios new / base (times as base / new, so above 1: new is faster).
Usage: summary.py OUT_DIR"""

import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
rounds = sorted({int(p.name.split("-")[1]) for p in out.glob("attention-*-base.jsonl")})


def ratio_cell(ratios):
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


print("## The op: bench --op attention --attn flash --paged 16, 12 heads of 64, ms per call\n")
print("| shape | base ms | new ms | base / new |")
print("| --- | --- | --- | ---: |")
attention = {tool: [[json.loads(line) for line in open(out / f"attention-{r}-{tool}.jsonl")]
                    for r in rounds] for tool in ("base", "new")}
for i, case in enumerate(attention["base"][0]):
    shape = f"{case['batch']} x {case['q_len']} behind {case['kv_len']}"
    base = [attention["base"][r][i]["time_ms_median"] for r in range(len(rounds))]
    new = [attention["new"][r][i]["time_ms_median"] for r in range(len(rounds))]
    print(f"| {shape} | {', '.join(f'{v:.3f}' for v in base)} | {', '.join(f'{v:.3f}' for v in new)}"
          f" | {ratio_cell([b / n for b, n in zip(base, new)])} |")

print("\n## The engine: bench --op serving, synthetic GPT-2, output tokens/s\n")
print("| workload | dtype | concurrency | base tok/s | new tok/s | new / base |")
print("| --- | --- | ---: | --- | --- | ---: |")
for prefix, workload in (("serving", "256 in, 128 out"), ("serving-long", "768 in, 128 out")):
    for dtype in ("q8_0", "bf16"):
        files = {tool: [out / f"{prefix}-{r}-{dtype}-{tool}.json" for r in rounds]
                 for tool in ("base", "new")}
        if not all(f.exists() for f in files["base"]):
            continue
        results = {tool: [json.load(open(f))["results"] for f in files[tool]] for tool in files}
        for c_index, first in enumerate(results["base"][0]):
            base = [rs[c_index]["output_tokens_per_s_median"] for rs in results["base"]]
            new = [rs[c_index]["output_tokens_per_s_median"] for rs in results["new"]]
            print(f"| {workload} | {dtype} | {first['concurrency']} | "
                  f"{', '.join(f'{v:.1f}' for v in base)} | {', '.join(f'{v:.1f}' for v in new)} | "
                  f"{ratio_cell([n / b for b, n in zip(base, new)])} |")
