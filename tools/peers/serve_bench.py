#!/usr/bin/env python3
"""attnscope serve against llama.cpp's llama-server, driven by guidellm, in interleaved rounds.

Both servers load the same random-weight checkpoint (attnscope the Hugging Face folder,
llama-server the GGUF its convert_hf_to_gguf.py made of it), listen on a free loopback port,
and get the same request mix from guidellm's OpenAI HTTP backend on /v1/completions: synthetic
prompts of --prompt-tokens tokens (OpenAI's GPT-2 vocabulary), exactly --output-tokens tokens
out (guidellm sends ignore_eos), streamed, at each --concurrency (a fixed number of streams,
each sending its next request when the last one ends). A round starts each server once and
runs every concurrency against it; the order of the servers alternates from round to round.

    python3 tools/peers/serve_bench.py --attnscope build/tools/attnscope \\
        --llama-server build/peers/llama.cpp/build/bin/llama-server \\
        --model build/peers/gpt2-random --gguf build/peers/gpt2-random-f32.gguf \\
        --guidellm build/peers/guidellm-venv/bin/guidellm --out docs/results/DATE-serve

Writes OUT/raw/round-R-SERVER-cC.json (guidellm's own report), OUT/serve_bench.json (every
number taken from those reports) and OUT/summary.md (medians over rounds and the per-round
ratios attnscope / llama-server). tools/peers/build_llama_cpp.sh builds llama-server;
make_random_checkpoint.py makes the checkpoint; README.md beside this file says the rest.
"""

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

SERVERS = ("attnscope", "llama-server")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_command(args, name: str, port: int) -> list[str]:
    threads = str(args.threads)
    slots = max(args.concurrency)
    if name == "attnscope":
        kv_dtype = ["--kv-dtype", args.kv_dtype] if args.kv_dtype else []
        return [args.attnscope, "serve", "-m", str(args.model), "--dtype", args.dtype, "--attn",
                "flash", "-t", threads, "--port", str(port), "--served-model-name", "model",
                *kv_dtype]
    # One slot per stream, each with room for a whole request (the context is shared out
    # among the slots); flash attention as attnscope's; no web UI.
    context = slots * (args.prompt_tokens + args.output_tokens + 64)
    return [args.llama_server, "-m", str(args.gguf), "-t", threads, "-tb", threads,
            "-np", str(slots), "-c", str(context), "-fa", "on", "--port", str(port),
            "--host", "127.0.0.1", "--alias", "model", "--no-webui"]


def wait_healthy(process: subprocess.Popen, port: int, name: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"serve_bench: {name} exited with status {process.returncode} while starting")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    process.kill()
    sys.exit(f"serve_bench: {name} did not answer /health within {timeout_s:.0f} s")


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def run_guidellm(args, port: int, concurrency: int, seed: int, report: Path) -> None:
    requests = max(args.min_requests, args.requests_per_stream * concurrency)
    data = {"kind": "synthetic_text", "prompt_tokens": args.prompt_tokens,
            "output_tokens": args.output_tokens}
    command = [
        args.guidellm, "run",
        "--backend", f"kind=openai_http,target=http://127.0.0.1:{port},"
                     "request_format=/v1/completions",
        "--profile", f"kind=concurrent,streams={concurrency}",
        "--constraint", f"kind=max_requests,count={requests}",
        "--tokenizer", f"kind=huggingface_auto,model={args.model}",
        "--data", json.dumps(data),
        "--seed", f"kind=static,value={seed}",
        "--output", f"kind=json,path={report}",
        "--disable-console-interactive",
    ]
    # One worker process: guidellm's default spawns up to 10, which on a small machine take
    # the cores the servers are measured on (one worker loads 2 cores by under 10% at c16).
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "GUIDELLM__MAX_WORKER_PROCESSES": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    if result.returncode != 0 or not report.is_file():
        sys.exit(f"serve_bench: guidellm failed ({result.returncode}):\n"
                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def metrics_of(report: Path) -> dict:
    """The numbers this benchmark compares, from guidellm's JSON report of one run."""
    benchmark = json.loads(report.read_text())["benchmarks"][0]
    metrics = benchmark["metrics"]

    def successful(name: str) -> dict:
        return metrics[name]["successful"]

    totals = metrics["request_totals"]
    return {
        "requests": totals["successful"],
        "errored": totals["errored"] + totals["incomplete"],
        "output_tokens_per_s": successful("output_tokens_per_second")["mean"],
        "requests_per_s": successful("requests_per_second")["mean"],
        "ttft_ms_median": successful("time_to_first_token_ms")["median"],
        "ttft_ms_p99": successful("time_to_first_token_ms")["percentiles"]["p99"],
        "itl_ms_median": successful("inter_token_latency_ms")["median"],
        "itl_ms_p99": successful("inter_token_latency_ms")["percentiles"]["p99"],
        "output_tokens_median": successful("output_token_count")["median"],
    }


def summarize(runs: list[dict], args) -> str:
    columns = [("output_tokens_per_s", "output tok/s", True),
               ("ttft_ms_median", "TTFT median ms", False),
               ("ttft_ms_p99", "TTFT p99 ms", False),
               ("itl_ms_median", "ITL median ms", False),
               ("itl_ms_p99", "ITL p99 ms", False)]
    lines = ["| concurrency | server | " + " | ".join(label for _, label, _ in columns) + " |",
             "| ---: | --- |" + " ---: |" * len(columns)]
    ratio_lines = ["| concurrency | " + " | ".join(label for _, label, _ in columns) + " |",
                   "| ---: |" + " ---: |" * len(columns)]
    for concurrency in args.concurrency:
        by_server = {name: [run for run in runs if run["server"] == name
                            and run["concurrency"] == concurrency] for name in SERVERS}
        for name in SERVERS:
            cells = [f"{statistics.median(run[key] for run in by_server[name]):.1f}"
                     for key, _, _ in columns]
            lines.append(f"| {concurrency} | {name} | " + " | ".join(cells) + " |")
        cells = []
        for key, _, higher_is_better in columns:
            ratios = []
            for ours, theirs in zip(by_server["attnscope"], by_server["llama-server"]):
                ratios.append(ours[key] / theirs[key] if higher_is_better
                              else theirs[key] / ours[key])
            cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
        ratio_lines.append(f"| {concurrency} | " + " | ".join(cells) + " |")
    return "\n".join(
        ["Medians over rounds:", "", *lines, "",
         "attnscope's advantage, median of per-round ratios (min-max): output tokens/s as "
         "attnscope / llama-server, latencies as llama-server / attnscope (above 1: attnscope "
         "ahead):", "", *ratio_lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnscope", required=True)
    parser.add_argument("--llama-server", required=True)
    parser.add_argument("--model", required=True, type=Path, help="Hugging Face folder")
    parser.add_argument("--gguf", required=True, type=Path,
                        help="the same model as GGUF, in the weight type of --dtype")
    parser.add_argument("--dtype", default="f32",
                        help="attnscope serve's --dtype (f32, bf16, f16, q8_0)")
    parser.add_argument("--kv-dtype", default=None,
                        help="attnscope serve's --kv-dtype (default: its own, f32 on the cpu; "
                             "llama-server keeps an f16 cache)")
    parser.add_argument("--guidellm", default="guidellm")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--concurrency", type=lambda s: [int(c) for c in s.split(",")],
                        default=[1, 4, 16])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--requests-per-stream", type=int, default=3)
    parser.add_argument("--min-requests", type=int, default=8)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    raw = args.out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    runs = []
    for round_index in range(args.rounds):
        order = SERVERS if round_index % 2 == 0 else tuple(reversed(SERVERS))
        for name in order:
            port = free_port()
            command = server_command(args, name, port)
            log = open(raw / f"round-{round_index}-{name}.log", "w")
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            try:
                wait_healthy(process, port, name)
                for concurrency in args.concurrency:
                    report = raw / f"round-{round_index}-{name}-c{concurrency}.json"
                    started = time.monotonic()
                    # Prompts never repeat across runs (no prefix or prompt cache hits from an
                    # earlier run), and both servers get the same ones for a (round, concurrency).
                    seed = args.seed + 1_000_000 * round_index + 1000 * concurrency
                    run_guidellm(args, port, concurrency, seed, report)
                    run = {"round": round_index, "server": name, "concurrency": concurrency,
                           **metrics_of(report)}
                    runs.append(run)
                    if run["errored"] or run["output_tokens_median"] != args.output_tokens:
                        print(f"serve_bench: WARNING: {name} c{concurrency}: {run['errored']} "
                              f"requests failed or unfinished, median output "
                              f"{run['output_tokens_median']} tokens", file=sys.stderr)
                    print(f"round {round_index} {name:12} c{concurrency:<3} "
                          f"{run['output_tokens_per_s']:7.1f} tok/s  TTFT median "
                          f"{run['ttft_ms_median']:7.1f} ms  ITL median {run['itl_ms_median']:6.1f}"
                          f" ms  ({time.monotonic() - started:.0f} s)", flush=True)
            finally:
                stop(process)
                log.close()

    setup = {"machine": cpu_model(), "cpus": os.cpu_count(),
             "servers": {name: server_command(args, name, 0) for name in SERVERS},
             **{key: getattr(args, key) for key in ("prompt_tokens", "output_tokens",
                                                    "concurrency", "rounds", "threads",
                                                    "requests_per_stream", "seed", "dtype")}}
    (args.out / "serve_bench.json").write_text(
        json.dumps({"setup": setup, "runs": runs}, indent=2, default=str) + "\n")
    summary = summarize(runs, args)
    (args.out / "summary.md").write_text(summary)
    print(summary)


if __name__ == "__main__":
    main()
