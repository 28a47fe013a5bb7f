"""Prints this folder's tables (markdown) from raw/: pp512 per round and its median with the
ratios to f32 and to PyTorch sdpa, and tg128 per dtype beside `bench --op membw`."""
import glob
import json
import statistics


def rows(path):
    text = open(path).read().strip()
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines()]
    return json.loads(text)["results"]


pp = {}
for path in sorted(glob.glob("raw/pp512-*.json")):
    name = path.split("pp512-")[1].rsplit("-", 1)[0]
    pp.setdefault(name, []).extend(statistics.median(r["samples_tokens_per_s"]) for r in rows(path))
print("| pp512 | rounds tok/s | median tok/s | vs attnscope f32 | vs torch sdpa |")
print("|---|---|---:|---:|---:|")
f32 = statistics.median(pp["f32"])
torch = statistics.median(pp["torch-sdpa"])
for name, values in pp.items():
    m = statistics.median(values)
    label = name if name.startswith("torch") else "attnscope " + name
    print(f"| {label} | {', '.join(f'{v:.1f}' for v in values)} | {m:.1f} | {m / f32:.2f} | {m / torch:.2f} |")

print()
membw = [r["gb_per_s_median"] for f in ("raw/membw-before.jsonl", "raw/membw-after.jsonl")
         for r in rows(f)]
print(f"`bench --op membw` (sum of 512 MiB): {membw[0]:.1f} GB/s before, {membw[1]:.1f} GB/s after")
print()
print("| tg128 | weight bytes | samples tok/s | median tok/s | vs f32 | weight GB/s |")
print("|---|---:|---|---:|---:|---:|")
tg = rows("raw/tg128.jsonl")
base = next(r["tokens_per_s_median"] for r in tg if r["dtype"] == "f32")
for r in tg:
    m = r["tokens_per_s_median"]
    samples = ", ".join(f"{v:.1f}" for v in r["samples_tokens_per_s"])
    print(f"| {r['dtype']} | {r['weight_bytes'] / 1e6:.1f} MB | {samples} | {m:.1f} | {m / base:.2f} | "
          f"{r['weight_bytes'] * m / 1e9:.1f} |")
