#!/usr/bin/env bash
# The device check: the one script to run on the lent GPU machine (one H200, CUDA 13, CMake,
# ninja, PyTorch; no apt, no internet). It builds attnscope there against the packed
# dependencies, runs the GPU tests (and compute-sanitizer where the runtime allows it), the
# attention microbenchmark at the study's shape beside PyTorch's SDPA backends, synthetic GPT-2
# generation and decode benchmarks per backend, and a GPU profile; the summary table comes last
# (the device tool returns the end of the output).
#
# How to call it (device time is 15 minutes per session, so prepare everything here first):
#   1. Here:  tools/device/pack_deps.sh                 (fills .deps/, about 9 MB, git-ignored)
#   2. Here:  OUT=/tmp/out bash tools/device/check.sh   (dry run: GPU steps skip with a message)
#   3. Device tool `run`: command "bash tools/device/check.sh", carry [".deps"], timeout_s 560.
#   4. Copy what came back into docs/results/DATE-h200/, write its README from
#      `python3 tools/device/summarize.py DIR` (the tables), and call give_back unless you rerun.
#
# Files written under $OUT (the tool returns at most 8): check.log (everything), summary.txt,
# ctest_gpu.log, sanitizer.log, attention.json (attnscope and PyTorch rows at the study's
# shape), model.jsonl (generate and bench rows, attnscope and PyTorch), profile.tar.gz (GPU
# trace and summary of synthetic:gpt2, the CUPTI-vs-event fidelity table, the compare report).
#
# Exit status: non-zero when configure, build, a GPU test or compute-sanitizer fails.
# Informational steps (benchmarks, generate, profile) are reported but never fail the check.
# The whole run stops starting steps past CHECK_BUDGET_S seconds (default 540) and cuts each
# step's timeout to what is left, so it ends inside the device call's limit.
#
# Environment: OUT (default /tmp/attnscope-check), BUILD_DIR (default build-device),
# CHECK_STEPS (a space-separated subset of the steps below, default all), ATTNSCOPE_NATIVE
# (default ON: built and run on the same machine).
#
# Adding a step: write a function step_NAME that returns 0 (pass), 1 (fail), 2 (skipped; print
# why) or 3 (informational failure), add NAME to `steps`, and give it a timeout in `timeouts`.
set -uo pipefail
cd "$(dirname "$0")/../.."

OUT=${OUT:-/tmp/attnscope-check}
BUILD_DIR=${BUILD_DIR:-build-device}
DEPS_DIR=$PWD/.deps
JOBS=$(nproc)
mkdir -p "$OUT"
exec > >(tee "$OUT/check.log") 2>&1

# Benchmarks before compute-sanitizer: the sanitizer is slow and runs last, on what time is left.
steps=(env configure build ctest_gpu bench_attention torch_attention generate bench_model profile
       sanitizer)
declare -A timeouts=([env]=20 [configure]=60 [build]=240 [ctest_gpu]=150 [bench_attention]=45
                     [torch_attention]=45 [generate]=60 [bench_model]=90 [profile]=90
                     [sanitizer]=100)
CHECK_BUDGET_S=${CHECK_BUDGET_S:-540}
informational="env bench_attention torch_attention generate bench_model profile"
[[ -n "${CHECK_STEPS:-}" ]] && read -r -a steps <<<"$CHECK_STEPS"

# nvcc and compute-sanitizer are often outside PATH in CUDA images.
if [[ -d /usr/local/cuda/bin && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH=$PATH:/usr/local/cuda/bin
fi
# The packed PCRE2 (the build-tree RPATH finds it too; this covers anything else).
export LD_LIBRARY_PATH=$DEPS_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

export OUT BUILD_DIR DEPS_DIR JOBS

have() { command -v "$1" >/dev/null 2>&1; }
has_gpu() { have nvidia-smi && nvidia-smi -L >/dev/null 2>&1; }
built() { [[ -x "$BUILD_DIR/tools/attnscope" ]]; }

# --- env: the machine, read-only queries only (never change the card's settings) -------------
step_env() {
  uname -a; echo "cores: $JOBS"; free -g 2>/dev/null | head -2
  if have nvidia-smi; then
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  else
    echo "SKIPPED nvidia-smi: not installed (no GPU on this machine)"
  fi
  if have nvcc; then nvcc --version; else echo "nvcc: not found"; fi
  cmake --version | head -1; echo "ninja $(ninja --version)"; "${CXX:-c++}" --version | head -1
  if [[ ! -f "$DEPS_DIR/include/pcre2.h" ]]; then
    echo "no .deps/: run tools/device/pack_deps.sh here and carry [\".deps\"]"; return 1
  fi
}

# --- configure: CUDA on, Hopper only (sm_90: one SASS target keeps the build short) ----------
step_configure() {
  local cuda=ON
  have nvcc || { echo "nvcc not found: configuring with ATTNSCOPE_CUDA=AUTO"; cuda=AUTO; }
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DATTNSCOPE_DEPS_DIR="$DEPS_DIR" -DATTNSCOPE_CUDA=$cuda -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DATTNSCOPE_NATIVE="${ATTNSCOPE_NATIVE:-ON}"
}

# --- build: the binary and the test suites the device runs, all cores ----------------------
step_build() {
  local targets=(attnscope)
  if grep -q '^CMAKE_CUDA_COMPILER:' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    targets+=(test_cuda_ops test_cuda_attention test_cuda_flash test_cuda_model test_cuda_profiler)
  fi
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}"
}

# --- ctest_gpu: the tests labelled gpu (CI runs every other test on every submission) -------
step_ctest_gpu() {
  built || { echo "SKIPPED: no build"; return 2; }
  has_gpu || { echo "SKIPPED: no GPU (nvidia-smi absent or sees none)"; return 2; }
  ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure --timeout 120 -j 4 2>&1 |
    tee "$OUT/ctest_gpu.log"
}

# --- sanitizer: memcheck over the attention suites, racecheck over flash (where supported) --
step_sanitizer() {
  built || { echo "SKIPPED: no build"; return 2; }
  have compute-sanitizer || { echo "SKIPPED: compute-sanitizer not installed"; return 2; }
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  local log=$OUT/sanitizer.log rc=0 suite
  : >"$log"
  for suite in "memcheck test_cuda_attention" "memcheck test_cuda_flash" "racecheck test_cuda_flash"; do
    set -- $suite
    echo "== compute-sanitizer --tool $1 $2" | tee -a "$log"
    timeout 30 compute-sanitizer --tool "$1" --error-exitcode 99 "$BUILD_DIR/tests/$2" \
      >>"$log" 2>&1 || rc=$?
    # Seen on gVisor machines (KINDS.md): the tool refuses the device. That is the sandbox.
    if grep -q "Device not supported" "$log"; then
      echo "SKIPPED: compute-sanitizer does not support the device on this runtime"; return 2
    fi
    if [[ $rc -eq 124 ]]; then echo "(timed out after 30 s: partial run)"; rc=0; fi
    [[ $rc -ne 0 ]] && break
  done
  tail -n 30 "$log"
  return "$rc"
}

# --- bench_attention: every backend at the study's shape, bf16, on the GPU -------------------
step_bench_attention() {
  built || { echo "SKIPPED: no build"; return 2; }
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  "$BUILD_DIR/tools/attnscope" bench --op attention --device cuda --dtype bf16 --attn all \
    -r 20 --warmup 3 -o jsonl >>"$OUT/attention.json" || return 3
  "$BUILD_DIR/tools/attnscope" bench --op attention --device cuda --dtype bf16 --attn all \
    --decode -r 20 --warmup 3 -o jsonl >>"$OUT/attention.json" || return 3
  "$BUILD_DIR/tools/attnscope" bench-attention --device cuda --dtype bf16 --reps 20 --warmup 3
}

# --- torch_attention: PyTorch's SDPA (default and each pinned backend), same shape ----------
step_torch_attention() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  python3 -c "import torch, transformers" 2>/dev/null || { echo "SKIPPED: no torch"; return 2; }
  local tmp=$OUT/torch_attention.tmp
  python3 tools/peers/torch_bench.py --op attention --device cuda --dtype bf16 -r 20 \
    --warmup 3 --output "$tmp" || return 3
  python3 -c "import json,sys; [print(json.dumps(r)) for r in json.load(open(sys.argv[1]))['results']]" \
    "$tmp" >>"$OUT/attention.json"
  rm -f "$tmp"
  grep -o '"backend": "[^"]*"\|"time_ms_median": [0-9.]*' "$OUT/attention.json" | paste - - | tail -n 12
}

# --- generate: 32 greedy tokens of synthetic GPT-2 (bf16, GPU) per backend, graphs on/off ---
step_generate() {
  built || { echo "SKIPPED: no build"; return 2; }
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  local attn rc=0 gen=("$BUILD_DIR/tools/attnscope" generate --model synthetic:gpt2
    --prompt-ids 464,2068 -n 32 --ignore-eos --device cuda --dtype bf16 --json)
  for attn in naive inplace math fused flash; do
    "${gen[@]}" --attn "$attn" >>"$OUT/model.jsonl" || { echo "generate --attn $attn failed"; rc=3; }
  done
  "${gen[@]}" --attn flash --no-cuda-graphs >>"$OUT/model.jsonl" || rc=3
  # The same tokens from the CPU in f32 and the GPU in f32 (greedy, a short prompt).
  "$BUILD_DIR/tools/attnscope" generate --model synthetic:gpt2 --prompt-ids 464,2068 -n 8 \
    --ignore-eos --attn flash --json >>"$OUT/model.jsonl" || rc=3
  "$BUILD_DIR/tools/attnscope" generate --model synthetic:gpt2 --prompt-ids 464,2068 -n 8 \
    --ignore-eos --attn flash --device cuda --json >>"$OUT/model.jsonl" || rc=3
  cut -c1-400 "$OUT/model.jsonl"
  return $rc
}

# --- bench_model: prefill and batch-1 decode, bf16, attnscope per backend and PyTorch -------
step_bench_model() {
  built || { echo "SKIPPED: no build"; return 2; }
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  local rc=0 tmp=$OUT/torch_model.tmp
  "$BUILD_DIR/tools/attnscope" bench --device cuda --dtype bf16 --attn all -p 512 -n 128 -r 3 \
    -o jsonl >>"$OUT/model.jsonl" || rc=3
  if python3 -c "import torch, transformers" 2>/dev/null; then
    python3 tools/peers/torch_bench.py --device cuda --dtype bf16 --attn eager,sdpa -p 512 \
      -n 128 -r 3 --output "$tmp" || rc=3
    [[ -f $tmp ]] && python3 -c "import json,sys; [print(json.dumps(r)) for r in json.load(open(sys.argv[1]))['results']]" \
      "$tmp" >>"$OUT/model.jsonl"
    rm -f "$tmp"
  fi
  return $rc
}

# --- profile: CUPTI profiles on the GPU and the compare report (the study on the real model) --
# One archive keeps the files-back count at eight: the model's trace and summary, the attention
# op's CUPTI-vs-event fidelity table, and `compare`'s report (Markdown, JSON, SVG charts).
step_profile() {
  built || { echo "SKIPPED: no build"; return 2; }
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  local dir=$OUT/profile rc=0 bin=$BUILD_DIR/tools/attnscope
  mkdir -p "$dir"
  "$bin" profile --model synthetic:gpt2 --device cuda --dtype bf16 --attn flash --prompt-len 128 \
    --gen 4 --trace "$dir/trace_gpu.json" --json "$dir/profile_gpu.json" --summary || rc=3
  "$bin" profile --op attention --attn fused --device cuda --dtype bf16 --fidelity \
    >"$dir/fidelity.txt" || rc=3
  cat "$dir/fidelity.txt"
  "$bin" compare --model synthetic:gpt2 --device cuda --dtype bf16 --prompt-lens 128,512 --gen 8 \
    --reps 3 --out "$dir/compare" || rc=3
  head -n 40 "$dir/compare/report.md" 2>/dev/null
  tar -czf "$OUT/profile.tar.gz" -C "$OUT" profile && rm -rf "$dir"
  return $rc
}

# --- run every step, then the summary ---------------------------------------------------------
export -f have has_gpu built $(compgen -A function step_)
summary=()
failed=0
for name in "${steps[@]}"; do
  echo; echo "===== $name ====="
  start=$SECONDS
  limit=${timeouts[$name]:-120}
  left=$((CHECK_BUDGET_S - SECONDS))
  if [[ $left -lt 10 ]]; then
    summary+=("$(printf '%-16s %-16s %5ds' "$name" "NOT-RUN(budget)" 0)"); continue
  fi
  [[ $limit -gt $left ]] && limit=$left
  # Each step runs in its own bash under `timeout`, which ends the step's whole process group.
  timeout "$limit" bash -o pipefail -c "step_$name"; rc=$?
  case $rc in
    0) status=PASS ;;
    2) status=SKIP ;;
    3) status=INFO-FAIL ;;
    124) status="TIMEOUT(${limit}s)"
         [[ " $informational " == *" $name "* ]] || failed=1 ;;
    *) status="FAIL(rc=$rc)"; failed=1 ;;
  esac
  summary+=("$(printf '%-16s %-16s %5ds' "$name" "$status" $((SECONDS - start)))")
  # Nothing after a failed configure or build can run.
  if [[ $rc -ne 0 && ( $name == configure || $name == build ) ]]; then
    summary+=("(stopped: $name failed)"); break
  fi
done

{
  echo; echo "===== summary ($(hostname), $((SECONDS))s total) ====="
  printf '%-16s %-16s %6s\n' step status time
  printf '%s\n' "${summary[@]}"
  if [[ $failed -eq 0 ]]; then echo "device check: PASSED"; else echo "device check: FAILED"; fi
} | tee "$OUT/summary.txt"
exit $failed
