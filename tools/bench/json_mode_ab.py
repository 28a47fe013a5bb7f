"""JSON mode's cost, side by side: `attnscope bench --op serving` on the same workload with and
without --json-object (or, with --schema, --json-schema FILE), in interleaved rounds (text
first in odd rounds, JSON in even ones), and per concurrency the per-round ratios JSON / text
of output tokens/s and of the median time per output token (TPOT), medians over the rounds.
A JSON reply ends when its object closes, so JSON runs may write fewer tokens, and their last
steps run fewer requests at once: throughput then drops for that alone, while TPOT at
concurrency 1 is the pick's own cost per token.
Writes every run's JSON lines under OUT_DIR/raw and prints a Markdown table.

    python3 tools/bench/json_mode_ab.py BINARY OUT_DIR [--rounds 5] [--model synthetic:gpt2]
        [--tokenizer DIR] [--schema FILE] [--dtype f32] [--concurrency 1,16] [--requests 16]
        [--output-len 48]
"""
import argparse
import json
import pathlib
import statistics
import subprocess

parser = argparse.ArgumentParser()
parser.add_argument("binary")
parser.add_argument("out_dir")
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--model", default="synthetic:gpt2")
parser.add_argument("--tokenizer", default="")
parser.add_argument("--schema", default="", help="a JSON schema file instead of JSON mode")
parser.add_argument("--dtype", default="f32")
parser.add_argument("--concurrency", default="1,16")
parser.add_argument("--requests", default="16")
parser.add_argument("--input-len", default="32")
parser.add_argument("--output-len", default="48")
args = parser.parse_args()

raw = pathlib.Path(args.out_dir) / "raw"
raw.mkdir(parents=True, exist_ok=True)
rates = {}  # (mode, concurrency) -> tokens/s per round
tpots = {}  # (mode, concurrency) -> median TPOT (ms) per round
tokens = {}  # (mode, concurrency) -> output tokens per round
for round_ in range(1, args.rounds + 1):
    modes = ["text", "json"] if round_ % 2 else ["json", "text"]
    for mode in modes:
        command = [args.binary, "bench", "--op", "serving", "--model", args.model,
                   "--dtype", args.dtype, "-c", args.concurrency, "--requests", args.requests,
                   "--input-len", args.input_len, "--output-len", args.output_len,
                   "--reps", "1", "-o", "jsonl"]
        if mode == "json":
            command += ["--json-schema", args.schema] if args.schema else ["--json-object"]
            if args.tokenizer:
                command += ["--tokenizer", args.tokenizer]
        lines = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        (raw / f"round-{round_}-{mode}.jsonl").write_text(lines)
        for line in lines.splitlines():
            row = json.loads(line)
            key = (mode, row["concurrency"])
            rates.setdefault(key, []).append(row["output_tokens_per_s_median"])
            tpots.setdefault(key, []).append(row["tpot_ms_median"])
            tokens.setdefault(key, []).append(row["output_tokens"])
    print(f"round {round_} done", flush=True)

print(f"\n{args.model} {args.dtype}, {args.requests} requests, prompts {args.input_len}, "
      f"up to {args.output_len} new tokens, {args.rounds} interleaved rounds\n")
print("| concurrency | tok/s text | tok/s JSON | tok/s JSON / text | TPOT ms text | TPOT ms JSON "
      "| TPOT JSON / text | output tokens text / JSON |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")


def ratio(values):
    """The median (min-max) of per-round ratios."""
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


for concurrency in sorted({c for _, c in rates}):
    text, json_ = rates[("text", concurrency)], rates[("json", concurrency)]
    text_tpot, json_tpot = tpots[("text", concurrency)], tpots[("json", concurrency)]
    print(f"| {concurrency} | {statistics.median(text):.1f} | {statistics.median(json_):.1f} | "
          f"{ratio([j / t for j, t in zip(json_, text)])} | {statistics.median(text_tpot):.2f} | "
          f"{statistics.median(json_tpot):.2f} | "
          f"{ratio([j / t for j, t in zip(json_tpot, text_tpot)])} | "
          f"{statistics.median(tokens[('text', concurrency)])} / "
          f"{statistics.median(tokens[('json', concurrency)])} |")
