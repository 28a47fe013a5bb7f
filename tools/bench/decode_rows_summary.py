#!/usr/bin/env python3
"""Table of tools/bench/decode_rows.sh's rounds: per cpu level and batch, the decode tokens/s of
BASE and NEW in every round and NEW / BASE (median and range of the per-round ratios).

    tools/bench/decode_rows_summary.py OUT_DIR > OUT_DIR/summary.md
"""
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

# (level, batch) -> tool -> round -> decode tokens/s of the batch
runs = defaultdict(lambda: defaultdict(dict))
for path in Path(sys.argv[1]).glob("r*-b*-*.json"):
    match = re.fullmatch(r"r(\d+)-(\w+)-b(\d+)-(base|new)\.json", path.name)
    if not match:
        continue
    round_index, level, batch, tool = match.groups()
    rows = json.loads(path.read_text())["results"]
    decode = next(row for row in rows if row["gen_tokens"] > 0)
    runs[(level, int(batch))][tool][int(round_index)] = decode["tokens_per_s_median"]

print("| level | batch | BASE tokens/s | NEW tokens/s | NEW / BASE, median (min-max) |")
print("| --- | ---: | --- | --- | ---: |")
for (level, batch), tools in sorted(runs.items()):
    rounds = sorted(set(tools["base"]) & set(tools["new"]))
    ratios = [tools["new"][r] / tools["base"][r] for r in rounds]
    listed = {tool: ", ".join(f"{tools[tool][r]:.0f}" for r in rounds) for tool in ("base", "new")}
    print(f"| {level} | {batch} | {listed['base']} | {listed['new']} | "
          f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")
