#!/usr/bin/env python3
"""The tables of attention_ab.sh's rounds: per case, each binary's per-round figures and the median
(min-max) of the per-round ratios (times as base / new, tokens/s as new / base: above 1, NEW is
faster).

    tools/bench/attention_ab_summary.py OUT_DIR > OUT_DIR/summary.md
"""

import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
rounds = sorted({int(p.name.split("-")[1]) for p in out.glob("attention-*-base.jsonl")})


def ratio_cell(ratios):
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def figures(values, digits):
    return ", ".join(f"{v:.{digits}f}" for v in values)


print("## The op: bench --op attention, ms per call\n")
print("| shape | base ms | new ms | base / new |")
print("| --- | --- | --- | ---: |")
attention = {tool: [[json.loads(line) for line in open(out / f"attention-{r}-{tool}.jsonl")]
                    for r in rounds] for tool in ("base", "new")}
for i, case in enumerate(attention["base"][0]):
    shape = (f"{case['test']}: {case['batch']} x {case['heads']} heads (kv {case['kv_heads']}) x "
             f"{case['q_len']} behind {case['kv_len']}, d {case['head_dim']}")
    if case.get("paged_block_tokens"):
        shape += f", paged in blocks of {case['paged_block_tokens']}"
    base = [attention["base"][r][i]["time_ms_median"] for r in range(len(rounds))]
    new = [attention["new"][r][i]["time_ms_median"] for r in range(len(rounds))]
    print(f"| {shape} | {figures(base, 3)} | {figures(new, 3)} | "
          f"{ratio_cell([b / n for b, n in zip(base, new)])} |")

serving = sorted({p.name.split("-")[2] for p in out.glob("serving-*-base.json")})
if serving:
    print("\n## The engine: bench --op serving, synthetic GPT-2, 256 in / 128 out, output tokens/s\n")
    print("| dtype | concurrency | base tok/s | new tok/s | new / base |")
    print("| --- | ---: | --- | --- | ---: |")
for dtype in serving:
    results = {tool: [json.load(open(out / f"serving-{r}-{dtype}-{tool}.json"))["results"]
                      for r in rounds] for tool in ("base", "new")}
    for c_index, first in enumerate(results["base"][0]):
        base = [rs[c_index]["output_tokens_per_s_median"] for rs in results["base"]]
        new = [rs[c_index]["output_tokens_per_s_median"] for rs in results["new"]]
        print(f"| {dtype} | {first['concurrency']} | {figures(base, 1)} | {figures(new, 1)} | "
              f"{ratio_cell([n / b for b, n in zip(base, new)])} |")
