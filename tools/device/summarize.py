#!/usr/bin/env python3
"""Turns what tools/device/check.sh brought back into the Markdown of a results README.

Takes what the device calls returned: the stage archives (stage1.tar.gz, stage2.tar.gz), folders
they were unpacked into, or a folder holding the files themselves. Reads the JSON-lines files in
them: attention.jsonl (`attnscope bench --op attention` rows and torch_bench.py's SDPA rows;
attention.json in older runs), model.jsonl and generate.jsonl (`attnscope generate --json`
objects and `bench` / torch_bench model rows), and each summary.txt, and prints:
  - the check's verdicts and step lines (summary.txt);
  - the attention microbenchmark at each shape: median microseconds per backend, kernels per
    call (observed / cost model), temporaries, speedup vs naive; PyTorch's SDPA backends beside;
    attnscope flash against torch's FLASH_ATTENTION; whether the study's ordering holds;
  - generate runs: decode tokens/s per backend, graphs on and off, and whether the f32 CPU and
    GPU runs produced the same tokens;
  - bench model rows (attnscope and PyTorch): tokens/s mean +- stddev;
  - stage 3's flash sweep (sweep.jsonl): TFLOP/s per head dim and length, attnscope's flash
    beside PyTorch's FLASH_ATTENTION and CUDNN_ATTENTION;
  - issue 23's targets, each with the measured value and whether it is met (with stage 2's
    fidelity.json and compare/report.json: CUPTI against CUDA events, the profiler's overhead);
  - decode steps on the device (the profiles' facts.device_steps): kernels per step, the time
    they ran, the time the GPU sat idle between them, and the rate the idle time alone allows.
A stage that timed out leaves partial files: a line cut short, or a row missing fields, is
skipped or shown as "-", and a note says how many lines could not be read. Standard library
only; every number comes from the files. Tested on archives with known numbers by
tests/tools/test_summarize.py (ctest test_device_summary).

    python3 tools/device/summarize.py stage1.tar.gz stage2.tar.gz > docs/results/DATE-h200/README.md
"""
import argparse
import json
import os
import statistics
import sys
import tarfile
import zlib

ATTENTION_FILES = ("attention.jsonl", "attention.json")
MODEL_FILES = ("generate.jsonl", "model.jsonl")
SWEEP_FILES = ("sweep.jsonl",)
# Stage 2's profile step: `profile --fidelity --json` (CUPTI against CUDA events per scope) and
# `compare`'s report (the profiler's decode overhead with its interval). Matched by path ending.
FIDELITY_FILE = "fidelity.json"
COMPARE_REPORT = "compare/report.json"
# `profile --json` of decode steps: stage 2's GPT-2 eager and with graphs, stage 3's Llama 3.2 1B
# shape with graphs. Their facts.device_steps say where a step's GPU time went.
PROFILE_FILES = ("profile_gpu.json", "profile_gpu_graphs.json", "profile_llama_graphs.json")

# Issue 23's speed targets. FlashAttention-2's forward TFLOP/s on an H100 (causal, head dim 64,
# bf16), as the FlashAttention-3 paper's figure gives it, at the two lengths the issue quotes.
FA2_H100_TFLOPS_D64 = {1024: 229, 16384: 299}
DECODE_TARGETS = {"synthetic:gpt2": 10000, "synthetic:llama-3.2-1b": 1000}  # tokens/s, batch 1
# The H200's memory bandwidth on its data sheet (bytes/s), the floor the issue's limits come from.
H200_BANDWIDTH = 4.8e12


def parse_rows(name, text, notes):
    """JSON objects, one per line; lines that are not whole objects (cut short) are counted."""
    rows, bad = [], 0
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(row, dict):
            rows.append(row)
    if bad:
        notes.append(f"{name}: {bad} line(s) cut short or unreadable, skipped")
    return rows


def gather(paths, notes):
    """{file name: [(where, text)]} of the files this script reads, from archives (also inside
    the folders given) and folders. The same text met twice (summary.txt is both beside the
    archive and in it) is kept once."""
    wanted = set(ATTENTION_FILES + MODEL_FILES + SWEEP_FILES +
                 PROFILE_FILES + ("summary.txt", FIDELITY_FILE, COMPARE_REPORT))
    found = {}

    def wanted_name(path):
        """The entry of `wanted` that `path` ends with (a file name or a folder/file), or None."""
        return next((w for w in wanted if path == w or path.endswith("/" + w)), None)

    def add(name, where, text):
        if all(text != seen for _, seen in found.get(name, [])):
            found.setdefault(name, []).append((where, text))

    def read_archive(path):
        errors = (tarfile.TarError, EOFError, OSError, zlib.error)  # an archive cut short
        try:
            with tarfile.open(path) as archive:
                for member in archive:
                    name = wanted_name(member.name)
                    if not (member.isfile() and name):
                        continue
                    data, stream = b"", archive.extractfile(member)
                    try:  # in pieces, so that a member cut short still gives its first part
                        while chunk := stream.read(1 << 16):
                            data += chunk
                    except errors as error:
                        notes.append(f"{path}:{member.name}: cut short ({error})")
                    add(name, f"{path}:{member.name}", data.decode(errors="replace"))
        except errors as error:
            notes.append(f"{path}: unreadable past some point ({error}); read what came before")

    def read_file(path, name):
        with open(path, errors="replace") as f:
            add(name, path, f.read())

    for path in paths:
        if os.path.isdir(path):
            for root, _, files in os.walk(path):
                for name in sorted(files):
                    full = os.path.join(root, name)
                    if name.endswith(".tar.gz"):
                        read_archive(full)
                    elif stored := wanted_name(full):
                        read_file(full, stored)
        elif path.endswith(".tar.gz") and os.path.isfile(path):
            read_archive(path)
        elif os.path.isfile(path) and (stored := wanted_name(path)):
            read_file(path, stored)
        else:
            notes.append(f"{path}: not a folder, a .tar.gz or a file this script reads")
    return found


def rows_of(found, names, notes):
    rows = []
    for name in names:
        for where, text in found.get(name, []):
            rows += parse_rows(where, text, notes)
    return rows


def fmt(value, spec, scale=1.0):
    """value * scale formatted with spec, or "-" when the row lacks it."""
    if not isinstance(value, (int, float)):
        return "-"
    return format(value * scale, spec)


def check_lines(found):
    texts = found.get("summary.txt", [])
    if not texts:
        return []
    out = ["### The check\n", "```"]
    for _, text in texts:
        out += [line for line in text.splitlines() if line.strip()]
    out += ["```", ""]
    return out


def attention_tables(rows):
    out = []
    shapes = {}
    for r in rows:
        if r.get("op") != "attention":
            continue
        key = tuple(r.get(k, "?") for k in ("batch", "heads", "q_len", "kv_len", "head_dim",
                                              "dtype"))
        shapes.setdefault(key, []).append(r)
    for (batch, heads, q_len, kv_len, head_dim, dtype), group in shapes.items():
        out.append(f"### Attention alone: B={batch} H={heads} q_len={q_len} kv_len={kv_len} "
                   f"D={head_dim} {dtype}, causal\n")
        out.append("| implementation | backend | median us | kernels observed/predicted "
                   "| temporaries MiB | vs attnscope naive |")
        out.append("|---|---|---:|---:|---:|---:|")
        naive = next((r.get("time_ms_median") for r in group
                      if r.get("implementation") == "attnscope" and r.get("backend") == "naive"
                      and not r.get("error")), None)
        medians = {}
        for r in group:
            implementation, backend = r.get("implementation", "?"), r.get("backend", "?")
            name = f"{implementation} {backend}"
            median = r.get("time_ms_median")
            if r.get("error") or not isinstance(median, (int, float)) or median <= 0:
                why = r.get("error") or "no median"
                out.append(f"| {implementation} | {backend} | error: {why} | | | |")
                continue
            medians[name] = median
            steps = (f"{r.get('steps_observed')}/{r.get('steps_predicted', '?')}"
                     if r.get("steps_observed") is not None else "-")
            temps = fmt(r.get("peak_temporary_bytes"), ".1f", 1 / 2**20)
            speedup = f"{naive / median:.2f}x" if isinstance(naive, (int, float)) else "-"
            out.append(f"| {implementation} | {backend} | {median * 1e3:.1f} | {steps} "
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
    runs = [r for r in rows if isinstance(r.get("generated_ids"), list)]
    if not runs:
        return []
    out = ["### generate (greedy, batch 1)\n",
           "| model | attention | device | dtype | cuda graphs (instantiated / updated / replayed) "
           "| prefill tok/s | decode tok/s | tokens |",
           "|---|---|---|---|---|---:|---:|---:|"]
    for r in runs:
        graphs = (f"on ({r.get('cuda_graph_instantiations', 0)} / "
                  f"{r.get('cuda_graph_updates', 0)} / {r.get('cuda_graph_replays', 0)})"
                  if r.get("cuda_graphs") else "off")
        out.append(f"| {r.get('model', '?')} | {r.get('attention', '?')} | "
                   f"{r.get('device', 'cpu')} | {r.get('dtype', 'f32')} | {graphs} | "
                   f"{fmt(r.get('prefill_tokens_per_s'), '.0f')} | "
                   f"{fmt(r.get('decode_tokens_per_s'), '.0f')} | {len(r['generated_ids'])} |")
    f32 = [r for r in runs if r.get("dtype", "f32") == "f32" and r.get("attention") == "flash"]
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
        rate = (f"{fmt(r.get('tokens_per_s_mean'), '.0f')} +- "
                f"{fmt(r.get('tokens_per_s_stddev'), '.0f')}"
                if r.get("tokens_per_s_mean") is not None else r.get("error", "-"))
        cells = [str(r.get(k, "-")) for k in ("implementation", "backend", "device", "dtype",
                                               "batch", "test")]
        out.append("| " + " | ".join(cells) + f" | {rate} |")
    out.append("")
    return out


def tflops(row):
    """A row's TFLOP/s, or None when it has an error or no rate."""
    rate = row.get("gflops")
    return rate / 1e3 if not row.get("error") and isinstance(rate, (int, float)) else None


def sweep_table(rows):
    rows = [r for r in rows if r.get("op") == "attention"]
    if not rows:
        return []
    columns = [("attnscope", "flash"), ("torch", "sdpa-flash_attention"),
               ("torch", "sdpa-cudnn_attention")]
    out = ["### Flash prefill TFLOP/s (causal, bf16, 16k tokens per call, width 2048)\n",
           "| D | T | B x H | attnscope flash | torch FLASH_ATTENTION | torch CUDNN_ATTENTION "
           "| FA2 on H100 (issue 23) | attnscope / best torch |",
           "|---:|---:|---|---:|---:|---:|---:|---:|"]
    shapes = sorted({(r.get("head_dim"), r.get("q_len")) for r in rows},
                    key=lambda shape: tuple(v if isinstance(v, int) else -1 for v in shape))
    for head_dim, length in shapes:
        here = [r for r in rows if (r.get("head_dim"), r.get("q_len")) == (head_dim, length)]
        rates, cells = {}, []
        for implementation, backend in columns:
            row = next((r for r in here if (r.get("implementation"), r.get("backend"))
                        == (implementation, backend)), None)
            rate = tflops(row) if row else None
            rates[(implementation, backend)] = rate
            cells.append(f"{rate:.1f}" if rate is not None else ("error" if row else "-"))
        fa2 = FA2_H100_TFLOPS_D64.get(length) if head_dim == 64 else None
        ours = rates[columns[0]]
        best_torch = max((v for k, v in rates.items() if k[0] == "torch" and v), default=None)
        ratio = f"{ours / best_torch:.2f}x" if ours and best_torch else "-"
        shape = f"{here[0].get('batch', '?')} x {here[0].get('heads', '?')}"
        out.append(f"| {head_dim} | {length} | {shape} | " + " | ".join(cells) +
                   f" | {fa2 or '-'} | {ratio} |")
    out.append("")
    return out


def json_documents(found, name, notes):
    """Each whole JSON object stored under `name`; anything else is noted and skipped."""
    documents = []
    for where, text in found.get(name, []):
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            document = None
        if isinstance(document, dict):
            documents.append(document)
        else:
            notes.append(f"{where}: not a whole JSON object, skipped")
    return documents


def gap_beyond_bytes(rate, rows):
    """What a replayed step spends beyond reading its weights at H200_BANDWIDTH, per gap between
    its graph's nodes (generate's cuda_graph_nodes and weight_bytes): docs/GPU.md, "Decode's
    budget". An upper bound: generate's decode time also holds the sampling and copies outside
    the graph. Empty when the rows lack the counts."""
    nodes = [r.get("cuda_graph_nodes") for r in rows]
    weights = [r.get("weight_bytes") for r in rows]
    if not rows or rate <= 0 or not all(isinstance(v, (int, float)) and v > 1
                                        for v in nodes + weights):
        return ""
    node_count = round(statistics.median(nodes))
    weight_bytes = statistics.median(weights)
    floor = f"the weights at {H200_BANDWIDTH / 1e12:.1f} TB/s"
    beyond_us = 1e6 / rate - weight_bytes / H200_BANDWIDTH * 1e6
    if beyond_us <= 0:
        return f"; {node_count} graph nodes: faster than reading {floor}"
    return f"; {node_count} graph nodes: {beyond_us / (node_count - 1):.2f} us a gap beyond {floor}"


def targets_table(attention, model, sweep, fidelity=(), compare=()):
    """Issue 23's targets that these files measure: what was measured, and whether it is met
    (yes, NO, or "undecided" where an interval straddles the target)."""
    out = []

    def line(target, measured, met):
        verdict = met if isinstance(met, str) else ("yes" if met else "NO")
        out.append(f"| {target} | {measured} | {verdict} |")

    study = [r for r in attention if (r.get("batch"), r.get("heads"), r.get("q_len"),
                                      r.get("head_dim"), r.get("dtype")) == (8, 16, 1024, 64, "bf16")]
    flash = next((r.get("time_ms_median") for r in study if r.get("implementation") ==
                  "attnscope" and r.get("backend") == "flash" and not r.get("error")), None)
    torch = [(r.get("time_ms_median"), r.get("backend")) for r in study
             if r.get("implementation") == "torch" and not r.get("error")
             and isinstance(r.get("time_ms_median"), (int, float))]
    if flash and torch:
        best, name = min(torch)
        line("flash at the study's shape at least as fast as PyTorch's best SDPA",
             f"{flash * 1e3:.1f} us vs {name} {best * 1e3:.1f} us", flash <= best)
    for length, level in FA2_H100_TFLOPS_D64.items():
        rate = next((tflops(r) for r in sweep if r.get("implementation") == "attnscope" and
                     (r.get("head_dim"), r.get("q_len")) == (64, length)), None)
        if rate:
            line(f"flash prefill D=64 T={length} at FA2's H100 level", f"{rate:.1f} vs {level} "
                 "TFLOP/s", rate >= level)
    # Stage 3's long runs only: stages 1 and 2 decode 32 and 128 tokens, too few to time.
    for name, target in DECODE_TARGETS.items():
        runs = [r for r in model
                if r.get("model") == name and r.get("dtype") == "bf16" and r.get("cuda_graphs")
                and r.get("attention") == "flash"
                and str(r.get("device", "")).startswith("cuda")
                and isinstance(r.get("decode_tokens"), int) and r["decode_tokens"] >= 500
                and isinstance(r.get("decode_tokens_per_s"), (int, float))]
        if runs:
            rate = statistics.median(r["decode_tokens_per_s"] for r in runs)
            line(f"{name} bf16 batch-1 decode >= {target} tokens/s",
                 f"{rate:.0f} tokens/s (median of {len(runs)} runs of >= 500 tokens)"
                 + gap_beyond_bytes(rate, runs), rate >= target)
    # CUPTI's kernel time against CUDA events around the same scope (events also time the gaps
    # between a scope's kernels, so the ratio is at least about 1).
    ratios = [(abs(r["ratio"] - 1.0), r.get("name", "?"), r["ratio"])
              for document in fidelity for r in document.get("fidelity") or []
              if isinstance(r, dict) and isinstance(r.get("ratio"), (int, float)) and r["ratio"] > 0]
    if ratios:
        gap, name, ratio = max(ratios)
        line("CUPTI kernel times within 2% of CUDA events",
             f"worst {name}: events / CUPTI = {ratio:.4f} ({len(ratios)} scopes)", gap <= 0.02)
    for document in compare:
        overhead = document.get("overhead")
        if not isinstance(overhead, dict):
            continue
        interval, value = overhead.get("interval"), overhead.get("median_percent")
        numbers = [value] + (interval if isinstance(interval, list) else [])
        if len(numbers) == 3 and all(isinstance(v, (int, float)) for v in numbers):
            low, high = interval
            met = "yes" if high < 3 else ("NO" if low >= 3 else "undecided")
            line("profiling overhead on decode < 3%", f"{value:.2f}% [{low:.2f}, {high:.2f}] "
                 f"over {overhead.get('runs', '?')} runs", met)
    if not out:
        return []
    return (["### Issue 23's targets\n", "| target | measured | met |", "|---|---|---|"] + out +
            [""])


def device_steps_table(profiles):
    """Where a decode step's GPU time went, per profile: `profile`'s facts.device_steps."""
    out = []
    for name, document in profiles:
        facts, run = document.get("facts"), document.get("run")
        steps = facts.get("device_steps") if isinstance(facts, dict) else None
        if not isinstance(steps, dict):
            continue
        source = run.get("source", "?") if isinstance(run, dict) else "?"
        idle = steps.get("idle_ms")
        allowed = 1e3 / idle if isinstance(idle, (int, float)) and idle > 0 else None
        out.append(f"| {source} | {name} | {fmt(steps.get('records'), '.0f')} | "
                   f"{fmt(steps.get('busy_ms'), '.3f')} | {fmt(steps.get('span_ms'), '.3f')} | "
                   f"{fmt(idle, '.3f')} | {fmt(steps.get('idle_percent'), '.1f')} | "
                   f"{fmt(steps.get('idle_us_per_gap'), '.2f')} | "
                   f"{fmt(steps.get('unprofiled_ms'), '.3f')} | {fmt(allowed, '.0f')} |")
    if not out:
        return []
    return (["### Decode steps on the device (medians over the profiled steps)\n",
             "| run | file | kernels, copies, memsets | busy ms | span ms | idle ms | idle % "
             "| idle us per gap | unprofiled step ms | tokens/s the idle time alone allows |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"] + out +
            ["", "Busy: while a kernel, copy or memset ran; span: from the first one's start to "
             "the last one's end (a graph's nodes only, in `_graphs` runs); an unprofiled step "
             "also counts the host's launches, or with graphs its capture and update "
             "(docs/GPU.md, \"Decode's budget\").", ""])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="stage archives (STAGE.tar.gz), or folders holding what check.sh "
                             "wrote")
    args = parser.parse_args()
    notes = []
    found = gather(args.paths, notes)
    attention = rows_of(found, ATTENTION_FILES, notes)
    model = rows_of(found, MODEL_FILES, notes)
    sweep = rows_of(found, SWEEP_FILES, notes)
    fidelity = json_documents(found, FIDELITY_FILE, notes)
    compare = json_documents(found, COMPARE_REPORT, notes)
    profiles = [(name, document) for name in PROFILE_FILES
                for document in json_documents(found, name, notes)]
    checks = check_lines(found)
    for note in notes:
        print(f"summarize: note: {note}", file=sys.stderr)
    if not attention and not model and not sweep and not checks:
        sys.exit("summarize: error: no summary.txt, attention.jsonl, model.jsonl, "
                 "generate.jsonl or sweep.jsonl rows in " + ", ".join(args.paths))
    lines = (checks + targets_table(attention, model, sweep, fidelity, compare) +
             device_steps_table(profiles) + attention_tables(attention) +
             sweep_table(sweep) + generate_table(model) + bench_table(model))
    if notes:
        lines += ["Partial input: " + "; ".join(notes) + "."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
