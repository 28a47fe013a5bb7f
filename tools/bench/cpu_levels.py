#!/usr/bin/env python3
"""One attnscope binary at two cpu levels (ATTNSCOPE_CPU_LEVEL), prefill in interleaved rounds.

A kernel written for one level (runtime/cpu_features.h) is measured against the level below it
on the same machine, in the same minutes: every round runs `attnscope bench --dtype D -pP -n 0`
on each synthetic shape at both levels (every --dtype in one bench call), the order flipped every other round, so a drift of the
shared machine lands on both sides. The ratio reported is the median (min-max) of the per-round
ratios NEW / BASE, never a ratio of medians.

    python3 tools/bench/cpu_levels.py --dtype f16,q8_0 --new amx --base avx512vnni --rounds 5 \\
        --out docs/results/DATE-NAME

Writes OUT/raw/round-R-MODEL-LEVEL.json (bench's own JSON) and OUT/summary.md (the table).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path


def bench(args: argparse.Namespace, model: str, level: str, output: Path) -> dict[str, float]:
    """Prefill tokens/s per weight dtype (bench's median over its repetitions) of `model` at
    `level`."""
    repetitions = 1 if model == "llama-3.2-1b" else args.repetitions
    command = [args.attnscope, "bench", "--model", f"synthetic:{model}", "--dtype", args.dtype,
               "-p", str(args.prompt), "-n", "0", "-r", str(repetitions), "--warmup", "1",
               "-t", str(args.threads), "-o", "json"]
    result = subprocess.run(command, env={**os.environ, "ATTNSCOPE_CPU_LEVEL": level},
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"cpu_levels: {' '.join(command)} at {level} failed:\n{result.stderr}")
    output.write_text(result.stdout)
    return {run["dtype"]: run["tokens_per_s_median"] for run in json.loads(result.stdout)["results"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attnscope", default="build/tools/attnscope")
    parser.add_argument("--dtype", default="bf16",
                        help="weight dtypes, comma-separated (bench --dtype)")
    parser.add_argument("--new", required=True, help="the level measured, e.g. amx")
    parser.add_argument("--base", required=True, help="the level it is set against")
    parser.add_argument("--models", nargs="+", default=["gpt2", "smollm2-135m", "llama-3.2-1b"],
                        help="synthetic shapes (Llama 3.2 1B runs one repetition)")
    parser.add_argument("--prompt", type=int, default=512, help="prompt tokens (ppP)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.rounds < 1 or args.repetitions < 1:
        parser.error("--rounds and --repetitions must be at least 1")

    (args.out / "raw").mkdir(parents=True, exist_ok=True)
    # rates[model][round][level][dtype]
    rates: dict[str, list[dict[str, dict[str, float]]]] = {model: [] for model in args.models}
    for round_index in range(1, args.rounds + 1):
        levels = [args.new, args.base] if round_index % 2 else [args.base, args.new]
        for model in args.models:
            rates[model].append({
                level: bench(args, model, level,
                             args.out / "raw" / f"round-{round_index}-{model}-{level}.json")
                for level in levels})
            row = rates[model][-1]
            for dtype in row[args.new]:
                print(f"round {round_index}/{args.rounds} {model} {dtype}: {args.new} "
                      f"{row[args.new][dtype]:.0f}, {args.base} {row[args.base][dtype]:.0f} "
                      "tokens/s", file=sys.stderr)

    lines = [f"| model (pp{args.prompt}, {args.threads} threads) | weights | {args.base} tokens/s | "
             f"{args.new} tokens/s | {args.new} / {args.base}, median (min-max) |",
             "| --- | --- | ---: | ---: | ---: |"]
    for model, rounds in rates.items():
        for dtype in rounds[0][args.new]:
            base = [r[args.base][dtype] for r in rounds]
            new = [r[args.new][dtype] for r in rounds]
            ratios = [n / b for n, b in zip(new, base)]
            lines.append(f"| {model} | {dtype} | {statistics.median(base):.0f} | "
                         f"{statistics.median(new):.0f} | {statistics.median(ratios):.2f} "
                         f"({min(ratios):.2f}-{max(ratios):.2f}) |")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
