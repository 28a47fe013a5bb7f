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

# record_revision: the commit measured, in $out/revision.txt.
record_revision() { git rev-parse --short HEAD > "$out/revision.txt"; }

# results_as_lines: the JSON document on stdin (torch_bench.py prints one) as one JSON line per
# result, the lines `attnscope bench -o jsonl` writes.
results_as_lines() {
  "$python" -c 'import json, sys; [print(json.dumps(r)) for r in json.load(sys.stdin)["results"]]'
}
