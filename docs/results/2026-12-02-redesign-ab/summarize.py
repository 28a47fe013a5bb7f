#!/usr/bin/env python3
"""Ratio table of run.sh's output: for each test, the median over rounds of new/base per round
(tokens/s: above 1 is faster; attention ms: below 1 is faster), with the min and max."""
import collections, statistics, sys

values = collections.defaultdict(dict)  # (test) -> {(round, side): value}
for line in open(sys.argv[1]):
    round_, side, test, value = line.split()
    values[test][(round_, side)] = float(value)
print("| test | base (median) | new (median) | new/base per round: median [min, max] |")
print("| --- | ---: | ---: | --- |")
for test, v in values.items():
    rounds = sorted({r for r, _ in v if (r, "base") in v and (r, "new") in v})
    ratios = [v[(r, "new")] / v[(r, "base")] for r in rounds]
    base = statistics.median(v[(r, "base")] for r in rounds)
    new = statistics.median(v[(r, "new")] for r in rounds)
    unit = "ms" if test.startswith("attention") else "tok/s"
    print(f"| {test} ({unit}) | {base:.3f} | {new:.3f} | {statistics.median(ratios):.3f} "
          f"[{min(ratios):.3f}, {max(ratios):.3f}] |")
