#!/usr/bin/env python3
"""Summarises run.sh's rounds: for each implementation and dtype the per-round tokens/s, their
median, and per-round ratios (rows of one round ran back to back, so their ratio cancels most of
the machine's drift), whose median is the figure to read. Also writes attnscope.json and
torch.json, every round's sample in one bench-format row each, for tools/peers/merge.py.
Standard library only.

    summarize.py docs/results/2026-12-01-cpu-prefill > summary.md
"""
import glob
import json
import os
import re
import statistics
import sys

folder = sys.argv[1]
runs = {}  # label -> {round: (row, document)}
for path in sorted(glob.glob(os.path.join(folder, "raw", "*.json"))):
    name = os.path.basename(path)
    match = re.match(r"(.+)-(\d+)\.json$", name)
    with open(path) as f:
        document = json.load(f)
    row = document["results"][0]
    runs.setdefault(match.group(1), {})[int(match.group(2))] = (row, document)


def speed(label, round_):
    return runs[label][round_][0]["samples_tokens_per_s"][0]


labels = sorted(runs)
rounds = sorted(set.intersection(*(set(r) for r in runs.values())))
print(f"{len(rounds)} rounds, pp512, 2 threads, tokens/s (higher is faster)\n")
print("| run | " + " | ".join(f"round {r}" for r in rounds) + " | median |")
print("| --- | " + " | ".join("---" for _ in rounds) + " | --- |")
for label in labels:
    values = [speed(label, r) for r in rounds]
    print(f"| {label} | " + " | ".join(f"{v:.1f}" for v in values) +
          f" | **{statistics.median(values):.1f}** |")

print("\nRatios within each round (first over second), then their median:\n")
print("| ratio | " + " | ".join(f"round {r}" for r in rounds) + " | median | min | max |")
print("| --- | " + " | ".join("---" for _ in rounds) + " | --- | --- | --- |")
pairs = [("attnscope-f32", "torch-sdpa"), ("attnscope-bf16", "attnscope-f32"),
         ("attnscope-f16", "attnscope-f32"), ("attnscope-bf16", "torch-sdpa")]
for a, b in pairs:
    if a not in runs or b not in runs:
        continue
    ratios = [speed(a, r) / speed(b, r) for r in rounds]
    print(f"| {a} / {b} | " + " | ".join(f"{v:.3f}" for v in ratios) +
          f" | **{statistics.median(ratios):.3f}** | {min(ratios):.3f} | {max(ratios):.3f} |")

# One bench-format file per tool, each (label) a row with all rounds' samples, for merge.py.
for tool, prefix in (("attnscope", "attnscope-"), ("torch", "torch-")):
    rows, document = [], None
    for label in labels:
        if not label.startswith(prefix):
            continue
        first, document = runs[label][rounds[0]]
        samples = [speed(label, r) for r in rounds]
        row = dict(first)
        row["samples_tokens_per_s"] = samples
        row["samples_s"] = [runs[label][r][0]["samples_s"][0] for r in rounds]
        row["tokens_per_s_mean"] = statistics.mean(samples)
        row["tokens_per_s_median"] = statistics.median(samples)
        row["tokens_per_s_stddev"] = statistics.stdev(samples) if len(samples) > 1 else 0.0
        row["tokens_per_s_median_low"] = min(samples)
        row["tokens_per_s_median_high"] = max(samples)
        if tool == "attnscope":
            row["backend"] = f"{row['backend']} {row['dtype']}"
        rows.append(row)
    if document is None:
        continue
    merged = dict(document)
    merged["results"] = rows
    merged["repetitions"] = len(rounds)
    with open(os.path.join(folder, f"{tool}.json"), "w") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")
