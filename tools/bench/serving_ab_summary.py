#!/usr/bin/env python3
"""serving_ab.sh's rounds as one table: per round each binary's output tokens/s and TPOT, the
ratio NEW / BASE (above 1: NEW is faster), and the milliseconds each named op's scopes took over
the traced run (the engine thread's scopes, tid 1), then the median (min-max) of the ratios.

    tools/bench/serving_ab_summary.py OUT_DIR [OP ...] > OUT_DIR/summary.md

OPs default to split_qkv_paged, attention.flash.paged, linear and linear_residual. Needs the
traces, which serving_ab.sh leaves beside the JSONs.
"""

import collections
import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
ops = sys.argv[2:] or ["split_qkv_paged", "attention.flash.paged", "linear", "linear_residual"]
rounds = sorted({int(p.name[1:].split("-")[0]) for p in out.glob("r*-base.json")})


def run(round_index: int, tool: str):
    result = json.load(open(out / f"r{round_index}-{tool}.json"))["results"][0]
    trace = json.load(open(out / f"r{round_index}-{tool}-trace.json"))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    op_ms = collections.defaultdict(float)
    for event in events:
        if event.get("ph") == "X" and event.get("tid") == 1:
            op_ms[event["name"]] += event["dur"] / 1e3
    return result["output_tokens_per_s_median"], result["tpot_ms_median"], op_ms


print("| round | BASE tokens/s | NEW tokens/s | NEW / BASE | BASE TPOT ms | NEW TPOT ms | "
      + " | ".join(f"{op} ms BASE / NEW" for op in ops) + " |")
print("| ---: " * (6 + len(ops)) + "|")
ratios = []
for r in rounds:
    base, new = run(r, "base"), run(r, "new")
    ratios.append(new[0] / base[0])
    cells = " | ".join(f"{base[2][op]:.0f} / {new[2][op]:.0f}" for op in ops)
    print(f"| {r} | {base[0]:.1f} | {new[0]:.1f} | {new[0] / base[0]:.3f} | {base[1]:.1f} | "
          f"{new[1]:.1f} | {cells} |")
print(f"\nNEW / BASE output tokens/s: median {statistics.median(ratios):.3f} "
      f"({min(ratios):.3f}-{max(ratios):.3f}) over {len(ratios)} rounds")
