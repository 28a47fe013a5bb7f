#!/usr/bin/env python3
"""Median prefill and decode speed of `attnscope generate`, run side by side.

Runs `attnscope generate --json` REPS times for each prompt length (prompts of random ids,
fixed seed), interleaving the lengths so that machine noise hits them alike, and prints a
Markdown table of medians and spread (min..max). Python standard library only.

    tools/bench/generate_medians.py --binary build/tools/attnscope --model synthetic:gpt2 \
        --prompt-lens 128,512 --new-tokens 64 --threads 2 --reps 5 [--json out.json]
"""
import argparse
import json
import random
import statistics
import subprocess
import sys

from cpu_model import cpu_model


def run_once(args, prompt_len):
    rng = random.Random(prompt_len)
    ids = ",".join(str(rng.randrange(50000)) for _ in range(prompt_len))
    command = [args.binary, "generate", "--model", args.model, "--prompt-ids", ids,
               "-n", str(args.new_tokens), "--ignore-eos", "--threads", str(args.threads),
               "--attn", args.attn, "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"attnscope failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="build/tools/attnscope")
    parser.add_argument("--model", default="synthetic:gpt2")
    parser.add_argument("--attn", default="naive")
    parser.add_argument("--prompt-lens", default="128,512")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", help="also write every run to this file")
    args = parser.parse_args()

    lengths = [int(x) for x in args.prompt_lens.split(",")]
    runs = {n: [] for n in lengths}
    for rep in range(args.reps):
        for n in lengths:
            print(f"rep {rep + 1}/{args.reps}, prompt {n}", file=sys.stderr)
            runs[n].append(run_once(args, n))

    print(f"{args.model}, attention {args.attn}, {args.threads} threads, f32, "
          f"{args.new_tokens} new tokens, {args.reps} runs each; CPU: {cpu_model()}\n")
    print("| prompt tokens | prefill tokens/s (median, min..max) "
          "| decode tokens/s (median, min..max) | decode ms/token |")
    print("| --- | --- | --- | --- |")
    for n in lengths:
        pre = [r["prefill_tokens_per_s"] for r in runs[n]]
        dec = [r["decode_tokens_per_s"] for r in runs[n]]
        print(f"| {n} | {statistics.median(pre):.1f} ({min(pre):.1f}..{max(pre):.1f}) "
              f"| {statistics.median(dec):.1f} ({min(dec):.1f}..{max(dec):.1f}) "
              f"| {1000 / statistics.median(dec):.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_model(), "args": vars(args), "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
