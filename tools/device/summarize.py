#!/usr/bin/env python3
"""Turns what tools/device/check.sh brought back into the Markdown of a results README.

Reads attention.json (JSON lines: `attnscope bench --op attention` rows and torch_bench.py's SDPA
rows) and model.jsonl (JSON lines: `attnscope generate --json` objects and `bench` / torch_bench
model rows) from DIR, and prints:
  - the attention microbenchmark at each shape: median microseconds per backend, kernels per
    call (observed / cost model), temporaries, speedup vs naive; PyTorch's SDPA backends beside;
    attnscope flash against torch's FLASH_ATTENTION; whether the study's ordering holds;
  - generate runs: decode tokens/s per backend, graphs on and off, and whether the f32 CPU and
    GPU runs produced the same tokens;
  - bench model rows (attnscope and PyTorch): tokens/s mean +- stddev.
Standard library only; every number comes from the files.

    python3 tools/device/summarize.py /path/to/out > docs/results/DATE-h200/README.md
"""
import argparse
import json
import os
import sys


def read_lines(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def attention_tables(rows):
    out = []
    shapes = {}
    for r in rows:
        if r.get("op") != "attention":
            continue
        key = (r["batch"], r["heads"], r["q_len"], r["kv_len"], r["head_dim"], r["dtype"])
        shapes.setdefault(key, []).append(r)
    for (batch, heads, q_len, kv_len, head_dim, dtype), group in shapes.items():
        out.append(f"### Attention alone: B={batch} H={heads} q_len={q_len} kv_len={kv_len} "
                   f"D={head_dim} {dtype}, causal\n")
        out.append("| implementation | backend | median us | kernels observed/predicted "
                   "| temporaries MiB | vs attnscope naive |")
        out.append("|---|---|---:|---:|---:|---:|")
        naive = next((r["time_ms_median"] for r in group if r.get("implementation") == "attnscope"
                      and r["backend"] == "naive" and not r.get("error")), None)
        medians = {}
        for r in group:
            name = f"{r['implementation']} {r['backend']}"
            if r.get("error"):
                out.append(f"| {r['implementation']} | {r['backend']} | error: {r['error']} | | | |")
                continue
            median = r["time_ms_median"]
            medians[name] = median
            steps = (f"{r['steps_observed']}/{r['steps_predicted']}"
                     if r.get("steps_observed") is not None else "-")
            temps = (f"{r['peak_temporary_bytes'] / 2**20:.1f}"
                     if r.get("peak_temporary_bytes") is not None else "-")
            speedup = f"{naive / median:.2f}x" if naive else "-"
            out.append(f"| {r['implementation']} | {r['backend']} | {median * 1e3:.1f} | {steps} "
                       f"| {temps} | {speedup} |")
        flash = medians.get("attnscope flash")
        torch_flash = medians.get("torch sdpa-flash_attention")
        if flash and torch_flash:
            verdict = "at least as fast" if flash <= torch_flash else "slower"
            out.append(f"\nattnscope flash {flash * 1e3:.1f} us vs torch FLASH_ATTENTION "
                       f"{torch_flash * 1e3:.1f} us: {torch_flash / flash:.2f}x ({verdict}).")
        ours = {k.split(" ", 1)[1]: v for k, v in medians.items() if k.startswith("attnscope ")}
        if all(b in ours for b in ("naive", "inplace", "math", "fused", "flash")):
            checks = [("math slower than inplace", ours["math"] > ours["inplace"]),
                      ("inplace faster than naive", ours["inplace"] < ours["naive"]),
                      ("fused and flash the two fastest",
                       sorted(ours, key=ours.get)[:2] in (["fused", "flash"], ["flash", "fused"]))]
            out.append("Study's ordering: " + "; ".join(
                f"{what}: {'yes' if ok else 'NO'}" for what, ok in checks) + ".")
        out.append("")
    return out


def generate_table(rows):
    runs = [r for r in rows if "generated_ids" in r]
    if not runs:
        return []
    out = ["### generate (greedy, batch 1)\n",
           "| model | attention | device | dtype | cuda graphs (instantiated / updated) "
           "| prefill tok/s | decode tok/s | tokens |",
           "|---|---|---|---|---|---:|---:|---:|"]
    for r in runs:
        graphs = (f"on ({r.get('cuda_graph_instantiations', 0)} / "
                  f"{r.get('cuda_graph_updates', 0)})" if r.get("cuda_graphs") else "off")
        out.append(f"| {r['model']} | {r['attention']} | {r.get('device', 'cpu')} | "
                   f"{r.get('dtype', 'f32')} | {graphs} | {r['prefill_tokens_per_s']:.0f} | "
                   f"{r['decode_tokens_per_s']:.0f} | {len(r['generated_ids'])} |")
    f32 = [r for r in runs if r.get("dtype", "f32") == "f32" and r["attention"] == "flash"]
    cpu = [r for r in f32 if str(r.get("device", "cpu")).startswith("cpu")]
    gpu = [r for r in f32 if str(r.get("device", "")).startswith("cuda")]
    if cpu and gpu:
        same = cpu[0]["generated_ids"] == gpu[0]["generated_ids"]
        out.append(f"\nf32 greedy tokens, CPU vs GPU (flash): {'identical' if same else 'DIFFER'}.")
    out.append("")
    return out


def bench_table(rows):
    bench = [r for r in rows if r.get("op") == "model"]
    if not bench:
        return []
    out = ["### bench (tokens/s, mean +- stddev)\n",
           "| implementation | backend | device | dtype | batch | test | tokens/s |",
           "|---|---|---|---|---:|---|---:|"]
    for r in bench:
        rate = (f"{r['tokens_per_s_mean']:.0f} +- {r['tokens_per_s_stddev']:.0f}"
                if r.get("tokens_per_s_mean") is not None else r.get("error", "-"))
        out.append(f"| {r['implementation']} | {r['backend']} | {r['device']} | {r['dtype']} | "
                   f"{r['batch']} | {r['test']} | {rate} |")
    out.append("")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the folder check.sh wrote ($OUT)")
    args = parser.parse_args()
    attention = read_lines(os.path.join(args.dir, "attention.json"))
    model = read_lines(os.path.join(args.dir, "model.jsonl"))
    if not attention and not model:
        sys.exit(f"summarize: error: no attention.json or model.jsonl rows in {args.dir}")
    print("\n".join(attention_tables(attention) + generate_table(model) + bench_table(model)))


if __name__ == "__main__":
    main()
