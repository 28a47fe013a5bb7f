"""Tables of docs/results/2026-12-02-engine/raw/ (run.sh's output), as README.md quotes them.

    python3 docs/results/2026-12-02-engine/summarize.py > docs/results/2026-12-02-engine/tables.md
"""
import json
import pathlib

raw = pathlib.Path(__file__).parent / "raw"


def mib(value):
    return f"{value / 2**20:.1f} MiB"


print("## Serving (bench --op serving), medians over the rounds; brackets: min-max of the rounds\n")
for name in ["gpt2", "smollm2-135m", "gpt2-shared-prefix"]:
    path = raw / f"serving-{name}.json"
    if not path.exists():
        continue
    report = json.loads(path.read_text())
    rows = report["results"]
    print(f"### {rows[0]['model']}{' (shared prefix)' if 'shared' in name else ''}: "
          f"{rows[0]['workload']}\n")
    print("| concurrency | output tokens/s | vs one at a time | requests/s | TTFT ms p50 / p99 "
          "| TPOT ms p50 / p99 | KV used peak | paged waste | contiguous waste | preempted "
          "| prefix hits / lookups |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        rates = r["samples_output_tokens_per_s"]
        speed = r.get("samples_speedup_vs_one_at_a_time")
        speed_text = (f"{r['speedup_vs_one_at_a_time']:.2f} ({min(speed):.2f}-{max(speed):.2f})"
                      if speed else "-")
        print(f"| {r['concurrency']} | {r['output_tokens_per_s_median']:.1f} "
              f"({min(rates):.1f}-{max(rates):.1f}) | {speed_text} | "
              f"{r['requests_per_s_median']:.2f} | {r['ttft_ms_median']:.0f} / "
              f"{r['ttft_ms_p99']:.0f} | {r['tpot_ms_median']:.1f} / {r['tpot_ms_p99']:.1f} | "
              f"{mib(r['kv_used_bytes_peak'])} | {100 * r['kv_paged_waste']:.1f}% | "
              f"{100 * r['kv_contiguous_waste']:.1f}% | {r['preemptions']} | "
              f"{r['prefix_hits']} / {r['prefix_lookups']} |")
    machine = report["machine"]
    print(f"\n{machine['cpu']} (cpu kernels {machine['cpu_kernels']}), {machine['threads']} "
          f"threads, {report['repetitions']} rounds, revision {report['attnscope_revision']}.\n")

print("## The cost of paging (bench-attention --paged 16 against the contiguous call)\n")
print("| call | backend | contiguous ms | paged ms | paged / contiguous | contiguous temporaries "
      "| paged temporaries |")
print("|---|---|---:|---:|---:|---:|---:|")
for call in ["prefill", "decode"]:
    flat = json.loads((raw / f"attention-{call}-paged0.json").read_text())
    paged = json.loads((raw / f"attention-{call}-paged16.json").read_text())
    shape = flat["shape"]
    label = (f"{call}: {shape['batch']} x {shape['heads']} heads, q {shape['q_len']}, "
             f"kv {shape['kv_len']}, d {shape['head_dim']}")
    for a, b in zip(flat["results"], paged["results"]):
        print(f"| {label} | {a['backend']} | {a['median_ms']:.3f} | {b['median_ms']:.3f} | "
              f"{b['median_ms'] / a['median_ms']:.2f} | {mib(a['peak_temporary_bytes'])} | "
              f"{mib(b['peak_temporary_bytes'])} |")
