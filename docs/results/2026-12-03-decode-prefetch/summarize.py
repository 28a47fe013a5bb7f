#!/usr/bin/env python3
"""Table of run.sh's rounds: per cpu level, batch and weight type, NEW's tokens/s over BASE's
(median and range of the per-round ratios), NEW's median tokens/s, and each one's weight bytes
per second as a share of its own run's read roof (min-max over rounds).

    summarize.py OUT_DIR > summary.md
"""
import gzip
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

runs = defaultdict(dict)  # (level, batch, dtype) -> {(round, tool): row}
for path in sorted(Path(sys.argv[1], "raw").glob("round-*.json*")):
    _, round_index, level, tool, batch = path.name.split(".")[0].split("-")
    text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    for row in json.loads(text)["results"]:
        runs[(level, int(batch[1:]), row["dtype"])][(int(round_index), tool)] = row

print("| level | batch | weights | NEW / BASE, median (min-max) | NEW tokens/s | "
      "BASE % of roof | NEW % of roof |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
for (level, batch, dtype), rows in runs.items():
    rounds = sorted({r for r, _ in rows})
    ratios = [rows[(r, "new")]["tokens_per_s_median"] / rows[(r, "base")]["tokens_per_s_median"]
              for r in rounds]
    new_rate = statistics.median(rows[(r, "new")]["tokens_per_s_median"] for r in rounds)

    def shares(tool):
        values = [100 * rows[(r, tool)]["weights_share_of_read_roof"] for r in rounds]
        return f"{min(values):.0f}-{max(values):.0f}%"

    print(f"| {level} | {batch} | {dtype} | {statistics.median(ratios):.2f} "
          f"({min(ratios):.2f}-{max(ratios):.2f}) | {new_rate:.1f} | {shares('base')} | "
          f"{shares('new')} |")
