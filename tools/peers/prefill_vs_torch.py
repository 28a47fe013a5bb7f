#!/usr/bin/env python3
"""attnscope's prefill against PyTorch's (transformers) on the same synthetic shapes, interleaved.

Each round runs `attnscope bench --model synthetic:MODEL -p PROMPT -n 0` and
tools/peers/torch_bench.py (`--attn sdpa`, the same shape with random weights, the same dtype
throughout) for every model, the order flipped each round. Writes OUT/raw/round-R-MODEL-TOOL.json
(each tool's own JSON) and OUT/summary.md: per model the medians over rounds and the median of
the per-round ratios attnscope / PyTorch with their range.

    python3 tools/peers/prefill_vs_torch.py --python build/peers/venv/bin/python --out DIR
"""
import argparse
import json
import statistics
import subprocess
from pathlib import Path

TORCH_BENCH = Path(__file__).resolve().parent / "torch_bench.py"


def rate(path: Path) -> float:
    """The median tokens/s of a bench JSON's one result (both tools write samples_tokens_per_s)."""
    return statistics.median(json.loads(path.read_text())["results"][0]["samples_tokens_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnscope", default="build/tools/attnscope")
    parser.add_argument("--python", required=True, help="a Python with torch and transformers")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--models", default="gpt2,smollm2-135m")
    parser.add_argument("--dtype", default="bf16", choices=["f32", "f16", "bf16"])
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    models = args.models.split(",")
    raw = args.out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    commands = {
        "attnscope": lambda model, out: [
            args.attnscope, "bench", "--model", f"synthetic:{model}", "--dtype", args.dtype, "-p",
            str(args.prompt), "-n", "0", "-r", "3", "--warmup", "1", "-t", str(args.threads), "-o",
            "json"],
        "torch": lambda model, out: [
            args.python, str(TORCH_BENCH), "--model", model, "--attn", "sdpa", "--dtype",
            args.dtype, "-p", str(args.prompt), "-n", "0", "-r", "3", "--warmup", "1",
            "--threads", str(args.threads), "--output", str(out)],
    }
    rates = {model: [] for model in models}
    for round_index in range(1, args.rounds + 1):
        order = ["attnscope", "torch"] if round_index % 2 else ["torch", "attnscope"]
        for model in models:
            measured = {}
            for tool in order:
                out = raw / f"round-{round_index}-{model}-{tool}.json"
                result = subprocess.run(commands[tool](model, out), check=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                if tool == "attnscope":
                    out.write_bytes(result.stdout)
                measured[tool] = rate(out)
            rates[model].append(measured)
            print(f"round {round_index} {model}: attnscope {measured['attnscope']:.0f}, "
                  f"PyTorch {measured['torch']:.0f} tokens/s", flush=True)
    lines = [f"| model ({args.dtype}, pp{args.prompt}, {args.threads} threads) | attnscope tokens/s "
             "| PyTorch tokens/s | attnscope / PyTorch, median (min-max) |",
             "| --- | ---: | ---: | ---: |"]
    for model, rounds in rates.items():
        ratios = [r["attnscope"] / r["torch"] for r in rounds]
        lines.append(f"| {model} | {statistics.median(r['attnscope'] for r in rounds):.0f} | "
                     f"{statistics.median(r['torch'] for r in rounds):.0f} | "
                     f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
