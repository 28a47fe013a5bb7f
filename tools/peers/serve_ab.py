#!/usr/bin/env python3
"""Two attnscope binaries' `serve`, side by side: streamed completions at fixed concurrencies.

    python3 tools/peers/serve_ab.py --base BASE_BIN --new NEW_BIN --model DIR --dtype q8_0 \
        --out OUT [--rounds 3]

Each round starts each server in turn (their order alternating by round), waits for /health,
and at every --concurrency runs that many client threads, each sending its share of the
requests one after another: --prompt-tokens random token ids (a seed per round, concurrency and
request, so no prompt is a prefix-cache hit), exactly --output-tokens tokens out (ignore_eos),
streamed, the server's default sampling. A token's arrival time is when its server-sent event
is read. Per request: TTFT (send to first event), inter-token gaps; per run: output tokens/s
(all tokens over the run's wall time). Writes OUT/ab.json.gz (every request) and OUT/summary.md
(medians over rounds, ratios new / base per round).
"""

import argparse
import gzip
import http.client
import json
import random
import statistics
import subprocess
import threading
import time
from pathlib import Path

from serve_bench import free_port, stop, wait_healthy


def stream_one(port: int, prompt: list[int], tokens: int) -> dict:
    body = json.dumps({"model": "model", "prompt": prompt, "max_tokens": tokens, "stream": True,
                       "ignore_eos": True})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    sent = time.perf_counter()
    connection.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise SystemExit(f"HTTP {response.status}: {response.read()[:200]!r}")
    arrivals, pending = [], b""
    while chunk := response.read1(65536):
        now = time.perf_counter()
        pending += chunk
        while b"\n\n" in pending:
            event, pending = pending.split(b"\n\n", 1)
            if event.startswith(b"data: {"):
                arrivals.append(now)
    connection.close()
    return {"ttft_ms": round((arrivals[0] - sent) * 1e3, 3),
            "gaps_ms": [round((b - a) * 1e3, 3) for a, b in zip(arrivals, arrivals[1:])],
            "events": len(arrivals)}


def run_load(port: int, concurrency: int, requests: int, args, seed: int) -> dict:
    rng = random.Random(seed)
    prompts = [[rng.randrange(1000, 40000) for _ in range(args.prompt_tokens)]
               for _ in range(requests)]
    results: list[dict] = []
    lock = threading.Lock()

    def client(first: int) -> None:
        for index in range(first, requests, concurrency):
            one = stream_one(port, prompts[index], args.output_tokens)
            with lock:
                results.append(one)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    gaps = [g for r in results for g in r["gaps_ms"]]
    ttfts = sorted(r["ttft_ms"] for r in results)
    return {"output_tok_s": sum(r["events"] for r in results) / wall,
            "ttft_median_ms": statistics.median(ttfts),
            "itl_median_ms": statistics.median(gaps),
            "itl_p99_ms": statistics.quantiles(gaps, n=100)[98],
            "requests": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--dtype", default="q8_0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--concurrency", type=lambda s: [int(c) for c in s.split(",")],
                        default=[1, 16])
    parser.add_argument("--requests-per-stream", type=int, default=3)
    parser.add_argument("--min-requests", type=int, default=6)
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    binaries = {"base": args.base, "new": args.new}
    runs = []
    for round_index in range(args.rounds):
        order = ["base", "new"] if round_index % 2 == 0 else ["new", "base"]
        for name in order:
            port = free_port()
            command = [binaries[name], "serve", "-m", args.model, "--dtype", args.dtype,
                       "-t", str(args.threads), "--port", str(port)]
            server = subprocess.Popen(command, stderr=subprocess.DEVNULL)
            try:
                wait_healthy(server, port, name)
                for concurrency in args.concurrency:
                    requests = max(args.min_requests, concurrency * args.requests_per_stream)
                    seed = 1000 * round_index + concurrency
                    result = run_load(port, concurrency, requests, args, seed)
                    result.update(round=round_index, server=name, concurrency=concurrency)
                    runs.append(result)
                    print(f"round {round_index} {name} c={concurrency}: "
                          f"{result['output_tok_s']:.1f} tok/s, ITL median "
                          f"{result['itl_median_ms']:.2f} ms, TTFT median "
                          f"{result['ttft_median_ms']:.1f} ms", flush=True)
            finally:
                stop(server)
    with gzip.open(args.out / "ab.json.gz", "wt") as raw:
        json.dump({"args": vars(args) | {"out": str(args.out)}, "runs": runs}, raw, default=str)

    metrics = [("output_tok_s", "output tok/s", False), ("ttft_median_ms", "TTFT median ms", True),
               ("itl_median_ms", "ITL median ms", True), ("itl_p99_ms", "ITL p99 ms", True)]
    lines = ["| concurrency | binary | " + " | ".join(label for _, label, _ in metrics) + " |",
             "|---:|---|" + "---:|" * len(metrics)]
    ratio_lines = ["| concurrency | " + " | ".join(label for _, label, _ in metrics) + " |",
                   "|---:|" + "---:|" * len(metrics)]
    for concurrency in args.concurrency:
        of = {name: [r for r in runs if r["server"] == name and r["concurrency"] == concurrency]
              for name in binaries}
        for name in binaries:
            cells = [f"{statistics.median(r[key] for r in of[name]):.2f}" for key, _, _ in metrics]
            lines.append(f"| {concurrency} | {name} | " + " | ".join(cells) + " |")
        cells = []
        for key, _, lower_is_better in metrics:
            ratios = []
            for base_run, new_run in zip(of["base"], of["new"]):
                ratio = base_run[key] / new_run[key] if lower_is_better else new_run[key] / base_run[key]
                ratios.append(ratio)
            cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
        ratio_lines.append(f"| {concurrency} | " + " | ".join(cells) + " |")
    summary = ("Medians over rounds:\n\n" + "\n".join(lines) +
               "\n\nnew against base, median of the per-round ratios (min-max); above 1: new ahead "
               "(tokens/s as new / base, latencies as base / new):\n\n" + "\n".join(ratio_lines) + "\n")
    (args.out / "summary.md").write_text(summary)
    print(summary)


if __name__ == "__main__":
    main()
