#!/bin/bash
# serve_ab.sh BASE NEW OUT ROUNDS [more bench flags]: two attnscope binaries serving the same
# workload in alternated rounds, each run traced (serve_ab_summary.py OUT sums ops per run).
base=$1 new=$2 out=$3 rounds=$4; shift 4
mkdir -p $out
for r in $(seq 1 $rounds); do
  order="base new"; (( r % 2 == 0 )) && order="new base"
  for t in $order; do
    bin=$base; [[ $t == new ]] && bin=$new
    $bin bench --op serving -m synthetic:gpt2 --requests 32 -c 16 -r 1 --warmup 1 -o json --trace $out/r$r-$t-trace.json "$@" > $out/r$r-$t.json 2>/dev/null
  done
  echo "round $r done"
done
