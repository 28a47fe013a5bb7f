"""Prints this folder's tables (markdown) from raw/: batch-1 decode per weight dtype (the rounds'
tokens/s, their median, the ratio to f32, the weight bytes read per second) and pp512 in f32,
attnscope beside PyTorch with the per-round ratios' median; for synthetic:gpt2 (run.sh) and,
when its files exist, synthetic:smollm2-135m (run-smollm2.sh)."""
import json
import os
import statistics


def rows(path):
    return [json.loads(line) for line in open(path).read().strip().splitlines() if line.strip()]


def rounds(results):
    return [v for r in results for v in r["samples_tokens_per_s"]]


def membw_line(prefix):
    membw = [r["gb_per_s_median"] for when in ("before", "after")
             for r in rows(f"raw/{prefix}membw-{when}.jsonl")]
    print(f"`bench --op membw` (sum of 512 MiB, 2 threads): {membw[0]:.1f} GB/s before, "
          f"{membw[1]:.1f} GB/s after\n")


def decode_table(label, decode):
    base = statistics.median(rounds(decode["f32"]))
    print(f"| {label} | weight bytes | rounds tok/s | median tok/s | vs f32 | weight GB/s |")
    print("|---|---:|---|---:|---:|---:|")
    for dtype, results in decode.items():
        values = rounds(results)
        m = statistics.median(values)
        weight_bytes = results[0]["weight_bytes"]
        print(f"| {dtype} | {weight_bytes / 1e6:.1f} MB | {', '.join(f'{v:.1f}' for v in values)} "
              f"| {m:.1f} | {m / base:.2f} | {weight_bytes * m / 1e9:.1f} |")
    print()


def prefill_table(label, ours, torch):
    series = {}
    for name, results in (("attnscope", ours), ("PyTorch", torch)):
        for r in results:
            series.setdefault(f"{name} {r['backend']}", []).extend(r["samples_tokens_per_s"])
    sdpa = series["PyTorch sdpa"]
    print(f"| {label} | rounds tok/s | median tok/s | median of per-round ratios to PyTorch sdpa |")
    print("|---|---|---:|---:|")
    for name, values in series.items():
        ratios = [v / s for v, s in zip(values, sdpa)]
        print(f"| {name} | {', '.join(f'{v:.0f}' for v in values)} | "
              f"{statistics.median(values):.0f} | {statistics.median(ratios):.2f} |")
    print()


print("## synthetic:gpt2 (run.sh)\n")
membw_line("")
decode = {}
for r in rows("raw/tg128-b1.jsonl"):
    decode.setdefault(r["dtype"], []).append(r)
decode["q8_0 at avx512 (no VNNI)"] = rows("raw/tg128-b1-q8_0-avx512.jsonl")
decode_table("tg128, batch 1", decode)
prefill_table("pp512, f32, last-position logits", rows("raw/pp512-attnscope.jsonl"),
              rows("raw/pp512-torch.jsonl"))

if os.path.exists("raw/smollm2-tg128-b1.jsonl"):
    print("## synthetic:smollm2-135m (run-smollm2.sh)\n")
    membw_line("smollm2-")
    decode_table("tg128, batch 1", {"f32": rows("raw/smollm2-tg128-b1.jsonl")})
    prefill_table("pp512, f32, last-position logits", rows("raw/smollm2-pp512-attnscope.jsonl"),
                  rows("raw/smollm2-pp512-torch.jsonl"))
