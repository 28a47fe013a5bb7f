"""Prints this folder's tables (markdown) from raw/: per test and weight dtype, the rounds'
tokens/s, their median, the ratio to f32 and the weight bytes read per second."""
import json
import statistics


def rows(path):
    return [json.loads(line) for line in open(path).read().strip().splitlines()]


membw = [r["gb_per_s_median"] for f in ("raw/membw-before.jsonl", "raw/membw-after.jsonl")
         for r in rows(f)]
print(f"`bench --op membw` (sum of 512 MiB): {membw[0]:.1f} GB/s before, {membw[1]:.1f} GB/s after")
for path, label in (("raw/tg128-b1.jsonl", "tg128, batch 1"), ("raw/tg32-b8.jsonl", "tg32, batch 8")):
    by_dtype = {}
    for r in rows(path):
        by_dtype.setdefault(r["dtype"], (r["weight_bytes"], []))[1].extend(r["samples_tokens_per_s"])
    base = statistics.median(by_dtype["f32"][1])
    print()
    print(f"| {label} | weight bytes | rounds tok/s | median tok/s | vs f32 | weight GB/s |")
    print("|---|---:|---|---:|---:|---:|")
    batch = 8 if "batch 8" in label else 1
    for dtype, (weight_bytes, values) in by_dtype.items():
        m = statistics.median(values)
        # A step reads the weights once for all rows of the batch: steps/s = tokens/s / batch.
        gb_per_s = weight_bytes * m / batch / 1e9
        print(f"| {dtype} | {weight_bytes / 1e6:.1f} MB | {', '.join(f'{v:.1f}' for v in values)} | "
              f"{m:.1f} | {m / base:.2f} | {gb_per_s:.1f} |")
