#!/usr/bin/env python3
"""run.sh's tables: decode tokens/s per weight type, batch and depth (BASE and NEW per round,
NEW / BASE median and range of the per-round ratios), and flash's milliseconds per layer call
from the profiles.

    python3 docs/results/2026-12-04-decode-attention/summary.py OUT_DIR > OUT_DIR/summary.md
"""
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

out = Path(sys.argv[1])
rate = defaultdict(lambda: defaultdict(dict))  # (dtype, batch, depth) -> tool -> round -> tok/s
for path in out.glob("round-*.json"):
    _, round_index, tool = path.stem.split("-")
    for row in json.loads(path.read_text())["results"]:
        if row["gen_tokens"] > 0:
            rate[(row["dtype"], row["batch"], row["depth"])][tool][int(round_index)] = \
                row["tokens_per_s_median"]


def ratio_text(by_tool):
    rounds = sorted(set(by_tool["base"]) & set(by_tool["new"]))
    ratios = [by_tool["new"][r] / by_tool["base"][r] for r in rounds]
    listed = {t: ", ".join(f"{by_tool[t][r]:.0f}" for r in rounds) for t in ("base", "new")}
    return listed, f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


print("| weights | batch | depth | BASE tokens/s | NEW tokens/s | NEW / BASE, median (min-max) |")
print("| --- | ---: | ---: | --- | --- | ---: |")
for key in sorted(rate):
    listed, ratio = ratio_text(rate[key])
    print(f"| {key[0]} | {key[1]} | {key[2]} | {listed['base']} | {listed['new']} | {ratio} |")

flash = defaultdict(dict)  # tool -> round -> ms per flash.tiled call
for path in out.glob("profile-*.json"):
    _, round_index, tool = path.stem.split("-")
    for row in json.loads(path.read_text())["rows"]:
        if row["name"] == "flash.tiled":
            flash[tool][int(round_index)] = row["average_ns"] / 1e6
listed, ratio = ratio_text({t: {r: 1 / ms for r, ms in v.items()} for t, v in flash.items()})
print()
print("flash.tiled per layer call, q8_0, 16 sequences behind 512 tokens (ms): BASE "
      + ", ".join(f"{flash['base'][r]:.3f}" for r in sorted(flash['base']))
      + "; NEW " + ", ".join(f"{flash['new'][r]:.3f}" for r in sorted(flash['new']))
      + f"; BASE / NEW {ratio}")
