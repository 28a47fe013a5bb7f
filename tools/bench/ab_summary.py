#!/usr/bin/env python3
"""Table of tools/bench/ab_bench.sh's rounds: per model, cpu level, batch, weight type and test,
NEW's tokens/s over BASE's (median and range of the per-round ratios), NEW's median tokens/s,
and for decode each one's weight bytes per second as a share of its own run's read roof
(min-max over rounds). Reads OUT_DIR/raw/*.json or *.json.gz.

    tools/bench/ab_summary.py OUT_DIR > OUT_DIR/summary.md
"""
import gzip
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

runs = defaultdict(dict)  # (model, level, batch, dtype, test) -> {(round, tool): row}
for path in sorted(Path(sys.argv[1], "raw").glob("round-*.json*")):
    fields = path.name.split(".json")[0].split("-")
    round_index, tool, batch = int(fields[1]), fields[-2], int(fields[-1][1:])
    model, level = "-".join(fields[2:-3]), fields[-3]
    text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    for row in json.loads(text)["results"]:
        runs[(model, level, batch, row["dtype"], row["test"])][(round_index, tool)] = row

print("| model | level | batch | weights | test | NEW / BASE, median (min-max) | NEW tokens/s | "
      "BASE % of roof | NEW % of roof |")
print("| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |")
for (model, level, batch, dtype, test), rows in runs.items():
    rounds = sorted({r for r, _ in rows})
    ratios = [rows[(r, "new")]["tokens_per_s_median"] / rows[(r, "base")]["tokens_per_s_median"]
              for r in rounds]
    new_rate = statistics.median(rows[(r, "new")]["tokens_per_s_median"] for r in rounds)

    def shares(tool):
        values = [rows[(r, tool)].get("weights_share_of_read_roof") for r in rounds]
        if None in values:
            return "-"
        return f"{100 * min(values):.0f}-{100 * max(values):.0f}%"

    print(f"| {model} | {level} | {batch} | {dtype} | {test} | {statistics.median(ratios):.2f} "
          f"({min(ratios):.2f}-{max(ratios):.2f}) | {new_rate:.1f} | {shares('base')} | "
          f"{shares('new')} |")
