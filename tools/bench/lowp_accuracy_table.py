"""The markdown table of tools/bench/lowp_accuracy.sh's JSON files (one per run) in DIR."""
import json
import pathlib
import sys

directory = pathlib.Path(sys.argv[1])
print("| case | dtype | tokens | mean KL (nats) | max KL (nats) | top-1 agreement | "
      "max abs logit diff | perplexity (f32: ...) |")
print("|---|---|---|---|---|---|---|---|")
for baseline in sorted(directory.glob("*-f32.json")):
    case = baseline.name[: -len("-f32.json")]
    f32 = json.loads(baseline.read_text())
    for dtype in ("bf16", "f16", "q8_0"):
        path = directory / f"{case}-{dtype}.json"
        if not path.exists():
            continue
        run = json.loads(path.read_text())
        if run.get("refused"):
            print(f"| {case} | {dtype} | refused (rows not whole blocks of 32) | | | | | |")
            continue
        kl = run["kl_divergence"]
        print(f"| {case} | {dtype} | {kl['tokens']} | {kl['mean_kl']:.3g} | {kl['max_kl']:.3g} | "
              f"{kl['top1_agreement_percent']:.2f}% | {kl['max_abs_logit_diff']:.3g} | "
              f"{run['perplexity']:.5g} ({f32['perplexity']:.5g}) |")
