#!/usr/bin/env python3
"""serving.sh's table: per weight type and tool, output tokens/s at concurrency 1 and 16 and the
speed-up of 16 over 1 (median over rounds), and NEW / BASE at concurrency 16 per round.

    python3 docs/results/2026-12-04-decode-rows/serving_summary.py OUT_DIR
"""
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

rate = defaultdict(dict)  # (dtype, tool, concurrency) -> {round: output tokens/s}
for path in sorted(Path(sys.argv[1]).glob("round-*.json")):
    _, round_index, dtype, tool = path.stem.split("-")
    for row in json.loads(path.read_text())["results"]:
        rate[(dtype, tool, row["concurrency"])][int(round_index)] = row["output_tokens_per_s_median"]

print("| weights | binary | c=1 tokens/s | c=16 tokens/s | c=16 / c=1 | c=16 NEW / BASE (per round) |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for dtype in sorted({key[0] for key in rate}):
    for tool in ("base", "new"):
        one, sixteen = rate[(dtype, tool, 1)], rate[(dtype, tool, 16)]
        speedups = [sixteen[r] / one[r] for r in one]
        versus = ""
        if tool == "new":
            base = rate[(dtype, "base", 16)]
            versus = ", ".join(f"{sixteen[r] / base[r]:.2f}" for r in sorted(sixteen))
        print(f"| {dtype} | {tool} | {statistics.median(one.values()):.1f} | "
              f"{statistics.median(sixteen.values()):.1f} | {statistics.median(speedups):.2f} | "
              f"{versus} |")
