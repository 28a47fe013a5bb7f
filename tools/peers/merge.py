#!/usr/bin/env python3
"""Merges JSON runs of `attnscope bench` and its peers into one side-by-side Markdown table.

Rows with the same test (model op: batch, test; attention op: batch, heads, q_len, kv_len,
head_dim, dtype) sit together, one line per implementation and backend, with the ratio of each
attnscope row to every peer row (attnscope / peer: above 1 means attnscope is faster). Standard
library only.

    tools/peers/merge.py attnscope.json torch.json > table.md
"""
import argparse
import json
import sys


def label(row):
    return f"{row['implementation']} {row['backend']}"


def test_key(row):
    if row["op"] == "model":
        return (row["batch"], row["test"])
    return (row["batch"], row["heads"], row["q_len"], row["kv_len"], row["head_dim"], row["dtype"])


def speed(row):
    """Higher is better: tokens/s for the model op, calls/s for the attention op."""
    if row.get("error"):
        return None
    if row["op"] == "model":
        return row["tokens_per_s_mean"]
    return 1e3 / row["time_ms_median"]


def shown(row):
    if row.get("error"):
        return "unsupported"
    if row["op"] == "model":
        text = f"{row['tokens_per_s_mean']:.2f} ± {row['tokens_per_s_stddev']:.2f}"
        if row.get("ttft_ms_mean") is not None:
            text += f" | {row['ttft_ms_mean']:.1f}"
        else:
            text += " | -"
        return text
    text = f"{row['time_ms_median']:.2f} | {row['gflops']:.1f}"
    steps = row.get("steps_observed")
    temporaries = row.get("peak_temporary_bytes")
    text += f" | {steps if steps is not None else '-'}"
    text += f" | {temporaries / 2**20:.1f}" if temporaries is not None else " | -"
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="JSON files written by bench --output json")
    args = parser.parse_args()
    rows, machines = [], []
    for path in args.runs:
        with open(path) as f:
            report = json.load(f)
        machines.append(f"{path}: {report['tool']}, {report['machine']['cpu']}, "
                        f"{report['machine']['threads']} threads, {report['repetitions']} reps, "
                        f"{report['date']}")
        rows += report["results"]
    ops = {row["op"] for row in rows}
    if len(ops) != 1:
        sys.exit(f"merge: error: the runs mix ops {sorted(ops)}; merge one op at a time")
    op = ops.pop()
    peers = sorted({label(r) for r in rows if r["implementation"] != "attnscope"})
    if op == "model":
        header = "| batch | test | implementation | tokens/s | TTFT ms |"
    else:
        header = ("| batch | heads | q_len | kv_len | head_dim | dtype | implementation | median ms "
                  "| GFLOP/s | kernels/call | temporaries MiB |")
    header += "".join(f" x {peer} |" for peer in peers)
    print("\n".join(f"- {m}" for m in machines) + "\n")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    keys = []
    for row in rows:
        if test_key(row) not in keys:
            keys.append(test_key(row))
    for key in keys:
        group = [r for r in rows if test_key(r) == key]
        for row in group:
            cells = [str(k) for k in key] + [label(row), shown(row)]
            for peer in peers:
                peer_row = next((r for r in group if label(r) == peer), None)
                mine, theirs = speed(row), peer_row and speed(peer_row)
                ratio = (f"{mine / theirs:.2f}" if row["implementation"] == "attnscope"
                         and mine and theirs else "")
                cells.append(ratio)
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
