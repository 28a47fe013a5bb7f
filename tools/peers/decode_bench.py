#!/usr/bin/env python3
"""attnscope bench against llama.cpp's llama-bench (and PyTorch) on one checkpoint, interleaved.

Prefill (ppP) and batch-1 decode (tgN) at each weight type, the table of issue 29: attnscope
runs `bench --attn flash --dtype D -pP -nN --read-roof` on the Hugging Face folder (so every
round also measures the read-bandwidth probe, the roof the decode rows are a share of);
llama-bench runs the GGUF of the same weights at that type (made from the f32 GGUF by
llama-quantize when missing), with flash attention off and on (its best counts). attnscope's
bf16 is compared with llama.cpp's f16, as llama.cpp's CPU path has no faster 16-bit type.
With --torch PYTHON, PyTorch runs the same folder in the same rounds through transformers
(tools/peers/torch_bench.py, --torch-attn sdpa by default) at f32, f16 and bf16; it has no q8_0.

    python3 tools/peers/decode_bench.py --attnscope build/tools/attnscope \\
        --llama-bin build/peers/llama.cpp/build/bin --model build/peers/gpt2-random \\
        --gguf build/peers/gpt2-random-f32.gguf --out docs/results/DATE-decode-peers

Writes OUT/raw/round-R-{attnscope,llama,torch}-TYPE.json (each tool's own JSON), OUT/decode_bench.json
(the numbers taken from them) and OUT/summary.md: medians over rounds, the median (min-max) of
the per-round ratios attnscope / llama.cpp, and the decode weight bytes per second of both as a
share of the same round's roof, and PyTorch's tokens/s with attnscope's ratio to them.
tools/peers/README.md says how to build and make the inputs.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

# attnscope --dtype, llama.cpp's type for llama-quantize and the file name.
WEIGHT_TYPES = {"f32": "F32", "f16": "F16", "bf16": "F16", "q8_0": "Q8_0"}
TORCH_TYPES = ("f32", "f16", "bf16")
TORCH_BENCH = Path(__file__).resolve().with_name("torch_bench.py")


def run(command: list[str], output: Path, crash_ok: bool = False) -> dict | list | None:
    """The command's JSON on stdout, also written to `output`; None if it died of a signal and
    `crash_ok`; exits otherwise."""
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode < 0 and crash_ok:
        return None
    if result.returncode != 0:
        sys.exit(f"decode_bench: {' '.join(command)} failed ({result.returncode}):\n"
                 f"{result.stderr[-3000:]}")
    output.write_text(result.stdout)
    return json.loads(result.stdout)


def gguf_for(args, llama_type: str) -> Path:
    if llama_type == "F32":
        return args.gguf
    path = args.gguf.with_name(args.gguf.name.replace("-f32", "").replace(".gguf", "") +
                               f"-{llama_type.lower()}.gguf")
    if not path.is_file():
        subprocess.run([str(args.llama_bin / "llama-quantize"), str(args.gguf), str(path),
                        llama_type], check=True, capture_output=True)
    return path


def attnscope_round(args, dtype: str, raw: Path) -> dict:
    report = run([args.attnscope, "bench", "-m", str(args.model), "--attn", "flash", "--dtype",
                  dtype, "-p", str(args.prompt), "-n", str(args.gen), "-r", "1", "--warmup", "1",
                  "-t", str(args.threads), "--read-roof", "-o", "json"], raw)
    rows = {row["test"]: row for row in report["results"]}
    decode = rows[f"tg{args.gen}"]
    return {"pp": rows[f"pp{args.prompt}"]["tokens_per_s_mean"],
            "tg": decode["tokens_per_s_mean"],
            "roof_gb_per_s": decode["read_roof_gb_per_s"],
            "roof_variant": decode["read_roof_variant"],
            "weights_gb_per_s": decode["weights_gb_per_s_mean"]}


def llama_round(args, gguf: Path, raw: Path) -> dict:
    # llama.cpp's default repacks weights into its extra buffer types (AMX tiles on CPUs with
    # AMX); where that path crashes (its issue 20824: a segfault in ggml_backend_amx_mul_mat,
    # seen here on a Xeon with AMX-INT8 at q8_0), the run is repeated with --repack 0 and says so.
    command = [str(args.llama_bin / "llama-bench"), "-m", str(gguf), "-p", str(args.prompt),
               "-n", str(args.gen), "-r", "1", "-t", str(args.threads), "-fa", "0,1", "-o", "json"]
    repack = 1
    rows = run(command, raw, crash_ok=True)
    if rows is None:
        repack = 0
        rows = run(command + ["--repack", "0"], raw)
    best = {}
    for row in rows:
        test = "pp" if row["n_gen"] == 0 else "tg"
        if row["avg_ts"] > best.get(test, (0, None))[0]:
            best[test] = (row["avg_ts"], row["flash_attn"])
    size = rows[0]["model_size"]
    return {"pp": best["pp"][0], "pp_flash_attn": best["pp"][1], "tg": best["tg"][0],
            "tg_flash_attn": best["tg"][1], "repack": repack, "weight_bytes": size,
            "weights_gb_per_s": best["tg"][0] * size / 1e9}


def torch_round(args, dtype: str, raw: Path) -> dict:
    report = run([args.torch, str(TORCH_BENCH), "--model", str(args.model), "--attn",
                  args.torch_attn, "--dtype", dtype, "-p", str(args.prompt), "-n", str(args.gen),
                  "-r", "1", "--warmup", "1", "--threads", str(args.threads)], raw)
    best = {}
    for row in report["results"]:
        test = "pp" if row["gen_tokens"] == 0 else "tg"
        best[test] = max(best.get(test, 0.0), row["tokens_per_s_mean"])
    return best


def ratio_row(label: str, test_name: str, test: str, runs: list[dict], peer: str) -> str:
    """A table row: attnscope's and `peer`'s medians over `runs` and the per-round ratios."""
    ours = [r["attnscope"][test] for r in runs]
    theirs = [r[peer][test] for r in runs]
    ratios = [a / b for a, b in zip(ours, theirs)]
    return (f"| {label} | {test_name} | {statistics.median(ours):.1f} | "
            f"{statistics.median(theirs):.1f} | {statistics.median(ratios):.2f} "
            f"({min(ratios):.2f}-{max(ratios):.2f}) |")


def summarize(runs: list[dict], args) -> str:
    lines = ["| weights | test | attnscope | llama.cpp (best of -fa 0/1) | ratio, median (min-max) |",
             "| --- | --- | ---: | ---: | ---: |"]
    shares = ["| weights | attnscope decode, % of roof | llama.cpp decode, % of roof | roof GB/s "
              "(probe's best way) |", "| --- | ---: | ---: | ---: |"]
    tests = (("pp", f"pp{args.prompt}"), ("tg", f"tg{args.gen}"))
    for dtype in args.dtypes:
        mine = [r for r in runs if r["dtype"] == dtype]
        label = dtype if dtype != "bf16" else "bf16 (llama.cpp: f16)"
        if any(r["llama"]["repack"] == 0 for r in mine):
            label += " (llama.cpp: --repack 0, its default crashed)"
        for test, name in tests:
            lines.append(ratio_row(label, name, test, mine, "llama"))
        ours = [r["attnscope"]["weights_gb_per_s"] / r["attnscope"]["roof_gb_per_s"] for r in mine]
        theirs = [r["llama"]["weights_gb_per_s"] / r["attnscope"]["roof_gb_per_s"] for r in mine]
        roofs = [r["attnscope"]["roof_gb_per_s"] for r in mine]
        shares.append(f"| {dtype} | {100 * min(ours):.0f}-{100 * max(ours):.0f}% | "
                      f"{100 * min(theirs):.0f}-{100 * max(theirs):.0f}% | "
                      f"{min(roofs):.1f}-{max(roofs):.1f} |")
    parts = ["Tokens/s, medians over rounds; ratio attnscope / llama.cpp (above 1: "
             "attnscope faster):", "", *lines, "",
             "Decode weight bytes per second as a share of the same round's read roof "
             "(min-max over rounds):", "", *shares, ""]
    torch_runs = [r for r in runs if "torch" in r]
    if torch_runs:
        parts += [f"PyTorch (transformers, --attn {args.torch_attn}, the best counts) in the same "
                  "rounds; ratio attnscope / PyTorch:", "",
                  "| weights | test | attnscope | PyTorch | ratio, median (min-max) |",
                  "| --- | --- | ---: | ---: | ---: |"]
        for dtype in [d for d in args.dtypes if d in TORCH_TYPES]:
            mine = [r for r in torch_runs if r["dtype"] == dtype]
            for test, name in tests:
                parts.append(ratio_row(dtype, name, test, mine, "torch"))
        parts.append("")
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnscope", required=True)
    parser.add_argument("--llama-bin", required=True, type=Path,
                        help="folder with llama-bench and llama-quantize")
    parser.add_argument("--model", required=True, type=Path, help="Hugging Face folder")
    parser.add_argument("--gguf", required=True, type=Path, help="the same model as f32 GGUF")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--dtypes", type=lambda s: s.split(","), default=list(WEIGHT_TYPES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--gen", type=int, default=128)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--torch", help="a Python with torch and transformers: PyTorch too")
    parser.add_argument("--torch-attn", default="sdpa",
                        help="torch_bench.py's --attn (eager,sdpa: the best of both counts)")
    args = parser.parse_args()
    for dtype in args.dtypes:
        if dtype not in WEIGHT_TYPES:
            parser.error(f"--dtypes: {dtype} is not one of {', '.join(WEIGHT_TYPES)}")

    raw = args.out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    ggufs = {dtype: gguf_for(args, WEIGHT_TYPES[dtype]) for dtype in args.dtypes}
    runs = []
    for round_index in range(args.rounds):
        for dtype in args.dtypes:
            order = ["attnscope", "llama"]
            if args.torch and dtype in TORCH_TYPES:
                order.append("torch")
            # Each tool goes first in turn.
            order = order[round_index % len(order):] + order[:round_index % len(order)]
            run_ = {"round": round_index, "dtype": dtype}
            for tool in order:
                path = raw / f"round-{round_index}-{tool}-{dtype}.json"
                if tool == "attnscope":
                    run_[tool] = attnscope_round(args, dtype, path)
                elif tool == "llama":
                    run_[tool] = llama_round(args, ggufs[dtype], path)
                else:
                    run_[tool] = torch_round(args, dtype, path)
            runs.append(run_)
            print(f"round {round_index} {dtype:5} attnscope pp {run_['attnscope']['pp']:7.1f} "
                  f"tg {run_['attnscope']['tg']:6.1f} | llama.cpp pp {run_['llama']['pp']:7.1f} "
                  f"tg {run_['llama']['tg']:6.1f} | roof {run_['attnscope']['roof_gb_per_s']:.1f}"
                  f" GB/s" + (f" | torch pp {run_['torch']['pp']:7.1f} tg {run_['torch']['tg']:6.1f}"
                               if "torch" in run_ else ""), flush=True)
    setup = {key: str(value) if isinstance(value, Path) else value
             for key, value in vars(args).items()}
    (args.out / "decode_bench.json").write_text(
        json.dumps({"setup": setup, "ggufs": {k: str(v) for k, v in ggufs.items()},
                    "runs": runs}, indent=2) + "\n")
    summary = summarize(runs, args)
    (args.out / "summary.md").write_text(summary)
    print(summary)


if __name__ == "__main__":
    main()
