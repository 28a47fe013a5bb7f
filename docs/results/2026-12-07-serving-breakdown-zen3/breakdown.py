"""Where a traced `attnscope bench --op serving --trace FILE` run spent its time: the engine's
steps split into those carrying prompt chunks and pure decode steps, each kind's op totals (ms,
GFLOP/s from the ops' flops), and the pure decode steps' median by row count.
    python3 breakdown.py TRACE.json"""
import bisect
import collections
import json
import re
import sys

events = json.load(open(sys.argv[1]))
events = events["traceEvents"] if isinstance(events, dict) else events
events = [e for e in events if e.get("ph") == "X" and e.get("tid") == 1]
steps = [e for e in events if e["name"].startswith("engine.step")]
ops = sorted((e for e in events if e.get("cat") == "op" or e["name"] == "attention.flash.paged"),
             key=lambda e: e["ts"])
starts = [e["ts"] for e in ops]
step_kind = re.compile(r"engine.step: (\d+) prefill tokens in (\d+) chunks, (\d+) decodes")
for kind, wanted in (("steps with prompt chunks", lambda p: p > 0), ("pure decode steps", lambda p: p == 0)):
    chosen = [s for s in steps if wanted(int(step_kind.match(s["name"]).group(1)))]
    total_ms = collections.defaultdict(float)
    flops = collections.defaultdict(float)
    for s in chosen:
        i = bisect.bisect_left(starts, s["ts"])
        while i < len(ops) and ops[i]["ts"] < s["ts"] + s["dur"]:
            total_ms[ops[i]["name"]] += ops[i]["dur"] / 1e3
            flops[ops[i]["name"]] += ops[i].get("args", {}).get("flops", 0)
            i += 1
    print(f"{kind}: {len(chosen)} steps, {sum(s['dur'] for s in chosen) / 1e6:.2f} s")
    for name, ms in sorted(total_ms.items(), key=lambda item: -item[1]):
        rate = f", {flops[name] / ms / 1e6:.0f} GFLOP/s" if flops[name] else ""
        print(f"  {name}: {ms:.0f} ms{rate}")
by_rows = collections.defaultdict(list)
for s in steps:
    prompt, _, decodes = map(int, step_kind.match(s["name"]).groups())
    if prompt == 0:
        by_rows[decodes].append(s["dur"] / 1e3)
print("pure decode steps by rows: rows steps median-ms")
for rows in sorted(by_rows):
    durations = sorted(by_rows[rows])
    print(f"  {rows} {len(durations)} {durations[len(durations) // 2]:.1f}")
widest = max(by_rows)
chosen = [s for s in steps if step_kind.match(s["name"]).groups() == ("0", "0", str(widest))]
print(f"pure decode steps of {widest} rows, per step: op (FLOPs per row) calls ms GFLOP/s")
per_op = collections.defaultdict(lambda: [0, 0.0, 0.0])
for s in chosen:
    i = bisect.bisect_left(starts, s["ts"])
    while i < len(ops) and ops[i]["ts"] < s["ts"] + s["dur"]:
        op_flops = ops[i].get("args", {}).get("flops", 0)
        name = ops[i]["name"] if ops[i]["name"].startswith("attention") else f"{ops[i]['name']} ({op_flops // widest})"
        per_op[name][0] += 1
        per_op[name][1] += ops[i]["dur"] / 1e3
        per_op[name][2] += op_flops
        i += 1
for name, (calls, ms, op_flops) in sorted(per_op.items(), key=lambda item: -item[1][1]):
    rate = f" {op_flops / ms / 1e6:.0f}" if op_flops else ""
    print(f"  {name} {calls / len(chosen):.0f} {ms / len(chosen):.2f}{rate}")
