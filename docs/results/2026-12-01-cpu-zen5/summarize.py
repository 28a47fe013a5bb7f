"""Prints this folder's tables (markdown) from raw/ (run.sh): per round, the read bandwidth of
`bench --op membw` beside what each decode achieved in the same round; decode and pp512 per weight
dtype with the median of per-round ratios to f32; batch-8 decode against the previous revision;
pp512 in f32 of this revision, of the previous one (Eigen's GEMM) and of PyTorch, with the median
of per-round ratios to PyTorch sdpa."""
import json
import statistics


def rows(name):
    return [json.loads(line) for line in open(f"raw/{name}.jsonl").read().splitlines() if line]


def by_dtype(results):
    series = {}
    for r in results:
        series.setdefault(r["dtype"], []).extend(r["samples_tokens_per_s"])
    return series


def rounds_text(values):
    """A series' rounds as the tables list them: "812, 790, 805"."""
    return ", ".join(f"{v:.0f}" for v in values)


def per_round_ratio(values, reference):
    """The median of the ratios of each round's value to the same round's reference."""
    return statistics.median(v / r for v, r in zip(values, reference))


membw = [r["gb_per_s_median"] for r in rows("membw")]


def decode_table(label, results):
    series = by_dtype(results)
    weight_bytes = {r["dtype"]: r["weight_bytes"] for r in results}
    batch = results[0]["batch"]
    f32 = series["f32"]
    print(f"| {label} | weight bytes | rounds tok/s | median tok/s | per-round ratio to f32 "
          f"(median) | weight GB/s (median) | of the round's membw (median) |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for dtype, values in series.items():
        # Each decode step reads the weights once for the whole batch.
        gbs = [weight_bytes[dtype] * v / batch / 1e9 for v in values]
        share = [g / m for g, m in zip(gbs, membw)]
        print(f"| {dtype} | {weight_bytes[dtype] / 1e6:.1f} MB | "
              f"{rounds_text(values)} | {statistics.median(values):.1f} | "
              f"{per_round_ratio(values, f32):.2f} | {statistics.median(gbs):.1f} | {statistics.median(share):.0%} |")
    print()


def baseline_table(label, ours, baseline):
    mine, theirs = by_dtype(ours), by_dtype(baseline)
    print(f"| {label} | this revision, rounds tok/s | 8f30ea7, rounds tok/s | "
          f"per-round ratio (median) |")
    print("|---|---|---|---:|")
    for dtype, values in mine.items():
        print(f"| {dtype} | {rounds_text(values)} | {rounds_text(theirs[dtype])} | "
              f"{per_round_ratio(values, theirs[dtype]):.2f} |")
    print()


def ratio_table(label, series, reference, reference_name):
    """One row per series: its rounds, their median and the median of per-round ratios to
    series[reference]."""
    print(f"| {label} | rounds tok/s | median tok/s | per-round ratio to {reference_name} "
          f"(median) |")
    print("|---|---|---:|---:|")
    for name, values in series.items():
        print(f"| {name} | {rounds_text(values)} | {statistics.median(values):.0f} | "
              f"{per_round_ratio(values, series[reference]):.2f} |")


def dtype_prefill_table(label, results):
    ratio_table(label, by_dtype(results), "f32", "f32")
    print()


def peer_prefill_table(label, ours, baseline, torch):
    series = {"attnscope flash (this revision)":
              [v for r in ours if r["dtype"] == "f32" for v in r["samples_tokens_per_s"]],
              "attnscope flash (8f30ea7: Eigen's GEMM)":
              [v for r in baseline for v in r["samples_tokens_per_s"]]}
    for r in torch:
        series.setdefault(f"PyTorch {r['backend']}", []).extend(r["samples_tokens_per_s"])
    ratio_table(label, series, "PyTorch sdpa", "PyTorch sdpa")
    ours_f32 = list(series.values())
    gain = per_round_ratio(ours_f32[0], ours_f32[1])
    print(f"\nThis revision against 8f30ea7, median of per-round ratios: {gain:.2f}x\n")


print(f"`bench --op membw` per round (sum of 512 MiB, 2 threads; the last after the rounds): "
      f"{', '.join(f'{m:.1f}' for m in membw)} GB/s\n")
print("## synthetic:gpt2\n")
decode_table("tg128, batch 1", rows("gpt2-tg128-b1"))
decode_table("tg128, batch 8 (tok/s of all 8 rows)", rows("gpt2-tg128-b8"))
baseline_table("tg128, batch 8 against 8f30ea7 (before ops/cpu/dot_tile.h)",
               rows("gpt2-tg128-b8"), rows("gpt2-tg128-b8-baseline"))
dtype_prefill_table("pp512, last-position logits", rows("gpt2-pp512"))
peer_prefill_table("pp512, f32, last-position logits", rows("gpt2-pp512"),
                   rows("gpt2-pp512-baseline"), rows("gpt2-pp512-torch"))
print("## synthetic:smollm2-135m\n")
decode_table("tg128, batch 1", rows("smollm2-tg128-b1"))
peer_prefill_table("pp512, f32, last-position logits", rows("smollm2-pp512"),
                   rows("smollm2-pp512-baseline"), rows("smollm2-pp512-torch"))
