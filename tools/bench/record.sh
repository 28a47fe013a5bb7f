# The start that the recorded measurements (docs/results/*/run.sh) share, sourced from the
# repository root after a Release build in build/:
#     source tools/bench/record.sh docs/results/DATE-NAME
# It stops the run at the first failing command, names the results folder ($out), the binary
# measured ($bin) and the peer's Python ($python: $PYTHON, else python3), and makes $out/raw.
# It times nothing itself: each run.sh spells out every command it measures.
set -euo pipefail
out=${1:?usage: source tools/bench/record.sh OUT_DIR}
bin=build/tools/attnscope
python=${PYTHON:-python3}
mkdir -p "$out/raw"

# record_start: the commit measured, in $out/revision.txt, and the load average at the start,
# shown and in $out/uptime.txt.
record_start() {
  git rev-parse --short HEAD > "$out/revision.txt"
  uptime | tee "$out/uptime.txt"
}

# record_uptime: the load average now, shown and appended to $out/uptime.txt.
record_uptime() { uptime | tee -a "$out/uptime.txt"; }

# record_membw NAME: the memory bandwidth now (`bench --op membw`, 5 repeats), in
# $out/raw/membw-NAME.jsonl.
record_membw() { "$bin" bench --op membw -r 5 -o jsonl > "$out/raw/membw-$1.jsonl" 2>/dev/null; }

# results_as_lines: the JSON document on stdin (torch_bench.py prints one) as one JSON line per
# result, the lines `attnscope bench -o jsonl` writes.
results_as_lines() {
  "$python" -c 'import json, sys; [print(json.dumps(r)) for r in json.load(sys.stdin)["results"]]'
}
