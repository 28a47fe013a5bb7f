#!/usr/bin/env bash
# The device check: the one script to run on the lent GPU machine (one H200, 16 cores, CUDA 13,
# CMake, ninja, PyTorch; no apt, no internet). It runs as two device calls on one warm machine
# (the machine stays warm 30 s after a call and keeps ignored build outputs between calls), and
# once both have passed, a third in a later session:
#
#   stage1  proves the CUDA path: configure and build for sm_90 only, the `gpu`-labelled test
#           suites (with test_python_gpu when the image's pybind11 builds the Python module), and
#           one `attnscope generate` per attention backend on synthetic:gpt2. Any
#           failure is printed in full. If it fails: fix here, then rerun stage1 with the time left.
#   stage2  measures: the attention benchmark at the study's shape (B=8 H=16 T=1024 D=64, causal,
#           bf16) for every backend beside PyTorch's SDPA, pp512/tg128 and decode with CUDA graphs
#           on and off beside PyTorch's GPT-2, the CUPTI profile, the CUPTI-vs-CUDA-event fidelity
#           table, the compare report, `attnscope study` (the seed study's table in one command),
#           then compute-sanitizer: memcheck on the attention kernels and the Llama ops
#           and racecheck with the time left, then `attnscope explain` and `attnscope diverge`
#           (bf16 GPU against f32 CPU) with what is left. It reuses stage 1's build when the
#           sources match.
#   stage3  issue 23's speed targets, once stages 1 and 2 pass: flash prefill TFLOP/s at head
#           dims 64 and 128, causal bf16, T 1k-16k (16k tokens per call, width 2048) beside
#           PyTorch's FLASH_ATTENTION and CUDNN_ATTENTION; batch-1 bf16 decode of GPT-2 (1000
#           tokens, three runs) and of Llama 3.2 1B's shape (512 tokens, three runs, graphs on;
#           once off) beside PyTorch's Llama, and one profile of a Llama step launched as a graph
#           (kernels, busy and idle time). Alone in a session: command "bash
#           tools/device/check.sh stage3", carry [".deps"], timeout_s 500 (it builds first,
#           reusing a current build on a warm machine).
#
# How to call it (device time is 15 minutes per session, machine start included):
#   1. Here:   tools/device/pack_deps.sh                    (fills .deps/, about 9 MB, git-ignored)
#   2. Here:   OUT=$(mktemp -d) bash tools/device/check.sh stage1   (dry run; then stage2)
#   3. Device: run, command "bash tools/device/check.sh stage1", carry [".deps"], timeout_s 330.
#   4. Device, at once (within 30 s, while warm): command "bash tools/device/check.sh stage2",
#      carry [".deps"], timeout_s 400. Then call give_back. With the machine's start (1-2 min)
#      the two calls use at most about 14 of the 15 minutes. If stage 1 fails, fix it here and
#      rerun stage 1 with the time left; stage 2 then waits for a later session.
#   5. Copy what came back into docs/results/DATE-h200/ and write its README with
#      `python3 tools/device/summarize.py stage1.tar.gz stage2.tar.gz` (the tables; with
#      stage3.tar.gz too, the flash sweep and the targets table).
#
# Budgets. Each stage stops starting steps past its budget (CHECK_BUDGET_S: stage1 300 s, stage2
# 360 s, so the script ends well inside the call's timeout_s) and runs every step under
# `timeout -k 10 LIMIT`, LIMIT = the step's budget below, cut to what is left of the stage once
# the later required steps have their budgets set aside.
#   The build, timed on the development machine (2026-11-30: 2 cores, nvcc 13.0, sm_90 only,
#   attnscope and the five GPU suites, 92 ninja steps, no cache hits): 998 s wall while another
#   build shared the 2 cores (load about 6), 653 s of CPU (user 609 + sys 44), so about 330 s on
#   2 idle cores; the longest single unit, flash_cuda.cu (since split into
#   ops/attention/cuda/flash_mma.cu and flash_simt.cu), took 72 s wall under that load (a guess: 25-35 s alone). Scaled to the device's 16 cores: 653 / 16 = 41 s of parallel work, but the
#   longest units and the links run on few cores, so expect 60-90 s there; `build` gets 150 s.
#   The rest are first guesses (nothing has run on the GPU yet); correct them from the times in
#   summary.txt after the first run.
#   stage1 (300 s): env 15, configure 30, build 150, ctest_gpu 75, generate 30
#   stage2 (360 s): env 15, configure 30 and build 150 (seconds when stage 1's build is reused),
#           bench_attention 45, torch_attention 60, bench_model 75, profile 75, study 30,
#           memcheck 110 (required: its budget is always set aside), racecheck 60 and explain 40
#           (with the time left)
#   stage3 (450 s): env 15, configure 30, build 150, flash_sweep 90, decode_targets 150
#
# What comes back in $OUT (the tool returns at most 8 files; this writes 3):
#   summary.txt       one line per step, appended as the step ends; the verdict last
#   check.log         everything the steps printed, appended as it is printed
#   STAGE.tar.gz      the scratch folder STAGE/: summary.txt, logs/NAME.log per step, the ctest
#                     logs (ctest_gpu.log as printed, ctest_gpu_full.log every test's output), and
#                     stage1: generate.jsonl; stage2: attention.jsonl and model.jsonl (benchmark
#                     rows, attnscope and PyTorch), profile/ (GPU trace, summary JSON, fidelity
#                     table, the compare report with its SVG charts), study/ (the study's report,
#                     chart and one trace per backend), sanitizer.log, racecheck.log; stage3:
#                     sweep.jsonl (the flash sweep's rows), model.jsonl (the decode runs) and
#                     profile/profile_llama_graphs.{json,txt}.
#                     Packed again after every step and at exit (an EXIT trap), so a timeout or an
#                     interrupted step still returns what was gathered.
#
# Verdict (no silent pass). A step ends PASS, FAIL, SKIP (it printed "SKIPPED: why"), INFO-FAIL
# (an informational step failed: recorded, never fails the check), TIMEOUT or NOT-RUN (no time
# left). The last line of summary.txt is one of:
#   PASSED   every required step passed and, on a GPU machine, nothing was skipped;
#   FAILED   a required step failed, timed out or did not run; or on a GPU machine (nvidia-smi sees
#            one) a step was skipped, nvcc is missing, the build has no CUDA path (configure
#            demands ATTNSCOPE_CUDA=ON there), or a GPU test printed SKIPPED;
#   DRY RUN  no GPU here: GPU steps skip, and the line says the check would be FAILED so.
# Racecheck is informational on this first run: cp.async/ldmatrix give false positives.
# Exit status: 0 for PASSED and DRY RUN, 1 for FAILED, 2 for a usage error.
#
# Environment: OUT (default /tmp/attnscope-check), BUILD_DIR (default build-device),
# CHECK_BUDGET_S (the stage's budget), CHECK_STEPS (a space-separated subset of the stage's
# steps), ATTNSCOPE_NATIVE (default ON: built and run on the same machine).
#
# Adding a step: write a function step_NAME that returns 0 (pass), 1 (fail), 2 (skipped; print
# "SKIPPED: why") or 3 (informational failure), add NAME to a stage's list and give it a budget
# in `budget`; list it in `informational` when it must never fail the check.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

STAGE=${1:-}
case $STAGE in
  stage1 | stage2 | stage3) ;;
  *)
    echo "usage: tools/device/check.sh stage1|stage2|stage3   (see the header of this file)" >&2
    exit 2
    ;;
esac

# --- the steps, their budgets (seconds, see the header) and their kinds -----------------------
stage1_steps=(env configure build ctest_gpu generate)
stage2_steps=(env configure build bench_attention torch_attention bench_model profile study
              memcheck racecheck explain)
stage3_steps=(env configure build flash_sweep decode_targets)
declare -A budget=([env]=15 [configure]=30 [build]=150 [ctest_gpu]=75 [generate]=30
                   [bench_attention]=45 [torch_attention]=60 [bench_model]=75 [profile]=75
                   [study]=30 [memcheck]=110 [racecheck]=60 [explain]=40
                   [flash_sweep]=90 [decode_targets]=150)
# Informational steps never fail the check (they still must not be skipped on a GPU machine).
informational=" bench_attention torch_attention bench_model profile study racecheck explain "
informational+=" flash_sweep decode_targets "
case $STAGE in
  stage1) steps=("${stage1_steps[@]}"); CHECK_BUDGET_S=${CHECK_BUDGET_S:-300} ;;
  stage2) steps=("${stage2_steps[@]}"); CHECK_BUDGET_S=${CHECK_BUDGET_S:-360} ;;
  stage3) steps=("${stage3_steps[@]}"); CHECK_BUDGET_S=${CHECK_BUDGET_S:-450} ;;
esac
[[ -n "${CHECK_STEPS:-}" ]] && read -r -a steps <<<"$CHECK_STEPS"

# --- where things go ----------------------------------------------------------------------------
OUT=${OUT:-/tmp/attnscope-check}
BUILD_DIR=${BUILD_DIR:-build-device}
DEPS_DIR=$PWD/.deps
JOBS=$(nproc)
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
CHECK_LOG=$OUT/check.log
ARCHIVE=$OUT/$STAGE.tar.gz
: >"$SUMMARY"
: >"$CHECK_LOG"
# Every output is staged here, outside $OUT, and packed into one archive ($ARCHIVE).
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-$STAGE.XXXXXX")
STAGE_DIR=$SCRATCH/$STAGE
LOG_DIR=$STAGE_DIR/logs
mkdir -p "$LOG_DIR"

# nvcc and compute-sanitizer are often outside PATH in CUDA images.
if [[ -d /usr/local/cuda/bin && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH=$PATH:/usr/local/cuda/bin
fi
# The packed PCRE2 (the build-tree RPATH finds it too; this covers anything else).
export LD_LIBRARY_PATH=$DEPS_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Output as it happens: Python unbuffered, C and C++ programs line-buffered (see lb below).
export PYTHONUNBUFFERED=1

have() { command -v "$1" >/dev/null 2>&1; }
# Asked once: nvidia-smi can itself hang on a wedged driver, hence the timeout.
HAS_GPU=0
GPU_NAME=none
if have nvidia-smi && timeout -k 5 20 nvidia-smi -L >/dev/null 2>&1; then
  HAS_GPU=1
  GPU_NAME=$(timeout -k 5 20 nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
fi
NVCC=none
have nvcc && NVCC=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
export OUT BUILD_DIR DEPS_DIR JOBS STAGE STAGE_DIR HAS_GPU

# --- helpers the steps use (exported to each step's bash) ---------------------------------------
has_gpu() { [[ $HAS_GPU == 1 ]]; }
built() { [[ -x "$BUILD_DIR/tools/attnscope" ]]; }
# within SECONDS CMD...: CMD under its own time limit, inside a step. --foreground keeps CMD in
# the step's process group (a plain `timeout` makes a group of its own), so that when the step's
# limit strikes, the step's `timeout` ends CMD and all its children too.
within() {
  local seconds=$1
  shift
  timeout --foreground -k 5 "$seconds" "$@"
}
# lb CMD...: runs CMD with line-buffered stdout, so its output reaches the log before a timeout.
lb() {
  if have stdbuf; then stdbuf -oL -eL "$@"; else "$@"; fi
}
# What one JSON-lines file holds, one short line per row (for the console).
show_rows() { [[ -f $1 ]] && cut -c1-300 "$1"; }
# What the build reads: sources, CMake files, the packed dependencies and the configure flags.
# Stage 2 reuses stage 1's build when this matches the stamp stage 1 left (file times cannot be
# trusted: the device tool copies the tree again for every call).
source_stamp() {
  {
    find CMakeLists.txt cmake runtime profiler ops models tools tests python .deps -type f \
      \( -name '*.cpp' -o -name '*.cu' -o -name '*.h' -o -name '*.cuh' -o -name '*.hpp' \
      -o -name 'CMakeLists.txt' -o -name '*.cmake' -o -name '*.so*' \) -print0 2>/dev/null |
      sort -z | xargs -0 md5sum
    configure_flags
  } | md5sum | cut -d' ' -f1
}
build_is_current() {
  local stamp=$BUILD_DIR/check-stamp
  built && [[ -f $stamp && "$(cat "$stamp")" == "$(source_stamp)" ]]
}
# CUDA on, Hopper only (sm_90: one SASS target keeps the build short). A GPU machine demands the
# CUDA path (ATTNSCOPE_CUDA=ON fails the configure without nvcc); elsewhere AUTO is enough.
# The Python module (test_python_gpu) needs pybind11: the device image has it from pip (its
# CMake files where `python3 -m pybind11 --cmakedir` says), this machine from Debian.
configure_flags() {
  local cuda=AUTO pybind11_dir
  if has_gpu || have nvcc; then cuda=ON; fi
  pybind11_dir=$(python3 -m pybind11 --cmakedir 2>/dev/null)
  echo "-G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_DEPS_DIR=$DEPS_DIR -DATTNSCOPE_CUDA=$cuda" \
    "-DCMAKE_CUDA_ARCHITECTURES=90 -DATTNSCOPE_NATIVE=${ATTNSCOPE_NATIVE:-ON}" \
    "${pybind11_dir:+-Dpybind11_DIR=$pybind11_dir}"
}

# === the steps ==================================================================================

# --- env: the machine, read-only queries only (never change the card's settings) -------------
step_env() {
  uname -a
  echo "cores: $JOBS"
  free -g 2>/dev/null | head -2
  if has_gpu; then
    within 20 nvidia-smi
    within 20 nvidia-smi \
      --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  else
    echo "no GPU here (nvidia-smi absent or sees none): GPU steps will skip (a dry run)"
  fi
  if have nvcc; then nvcc --version | tail -n 2; else echo "nvcc: not found"; fi
  have compute-sanitizer && compute-sanitizer --version | tail -n 1
  # CUPTI 13.0 before Update 1 (API version 130000) can deadlock in cuptiActivityDisable and
  # crash in cuptiActivityFlushAll, both of which the profiler calls; 13.0 Update 1 is 130001.
  local cupti
  for cupti in /usr/local/cuda/lib64/libcupti.so.13 /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13; do
    [[ -f $cupti ]] || continue
    python3 -c "import ctypes, sys
version = ctypes.c_uint32()
ctypes.CDLL(sys.argv[1]).cuptiGetVersion(ctypes.byref(version))
print('cupti:', sys.argv[1], 'API version', version.value)" "$cupti" || echo "cupti: $cupti"
    break
  done
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" \
    2>/dev/null || echo "torch: not importable"
  cmake --version | head -1
  echo "ninja $(ninja --version)"
  "${CXX:-c++}" --version | head -1
  local rc=0
  if [[ ! -f "$DEPS_DIR/include/pcre2.h" ]]; then
    echo "FAIL: no .deps/: run tools/device/pack_deps.sh here and carry [\".deps\"]"
    rc=1
  fi
  if has_gpu && ! have nvcc; then
    echo "FAIL: a GPU but no nvcc: the CUDA path cannot be built"
    rc=1
  fi
  return $rc
}

# --- configure: CMake with the packed dependencies; CUDA demanded on a GPU machine -----------
step_configure() {
  if [[ $STAGE != stage1 ]] && build_is_current; then
    echo "REUSED: stage 1's build in $BUILD_DIR (same sources and flags)"
    return 0
  fi
  # shellcheck disable=SC2046  # the flags are words on purpose
  lb cmake -S . -B "$BUILD_DIR" $(configure_flags) || return 1
  local cache=$BUILD_DIR/CMakeCache.txt
  if has_gpu && ! grep -q '^CMAKE_CUDA_COMPILER:[A-Z]*=.' "$cache"; then
    echo "FAIL: a GPU machine, but the build has no CUDA path"
    return 1
  fi
  if grep -q '^CMAKE_CUDA_COMPILER:[A-Z]*=.' "$cache"; then
    echo "NOTE: CUDA path ON ($(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$cache"))"
  else
    echo "NOTE: no nvcc: CPU-only build (on a GPU machine this fails the check)"
  fi
}

# --- build: the binary and the GPU test suites, all cores ----------------------------------
step_build() {
  if [[ $STAGE != stage1 ]] && build_is_current; then
    echo "REUSED: stage 1's build in $BUILD_DIR (same sources and flags)"
    return 0
  fi
  local targets=(attnscope)
  if grep -q '^CMAKE_CUDA_COMPILER:[A-Z]*=.' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    targets+=(test_cuda_ops test_cuda_attention test_cuda_flash test_cuda_model test_cuda_llama
      test_cuda_paged test_cuda_profiler)
  fi
  # The Python module when pybind11 and Python's headers were found (test_python_gpu runs it):
  # built alongside, but a failure there must not stop the C++ targets (-k 0 keeps going), and
  # shows as test_python_gpu's failure in ctest_gpu.
  local python_module=() module_note
  module_note=" (no Python module: pybind11 or Python's headers not found; test_python_gpu not run)"
  if grep -q '^build _attnscope: ' "$BUILD_DIR/build.ninja" 2>/dev/null; then
    python_module=(_attnscope)
    module_note=" and the Python module"
  fi
  local start=$SECONDS log=$STAGE_DIR/logs/build_ninja.log
  if ! lb cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}" "${python_module[@]}" \
    -- -k 0 | tee "$log"; then
    # ninja names each failed output on a FAILED: line (newer ninjas put "[code=N] " first);
    # only the module's (python/) may fail.
    local failed
    failed=$(grep '^FAILED: ' "$log")
    if [[ -z $failed ]] || grep -Evq '^FAILED: (\[code=[0-9]+\] )?python/' <<<"$failed"; then
      return 1
    fi
    module_note=" but not the Python module (test_python_gpu will fail)"
  fi
  echo "NOTE: built ${#targets[@]} targets$module_note in $((SECONDS - start)) s on $JOBS cores:" \
    "${targets[*]}"
  source_stamp >"$BUILD_DIR/check-stamp"
}

# --- ctest_gpu: the tests labelled gpu (CI runs every other test on every submission) -------
step_ctest_gpu() {
  has_gpu || { echo "SKIPPED: no GPU (nvidia-smi absent or sees none)"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local rc=0
  # --no-tests=error: a build without the GPU suites must not pass by running nothing.
  # The gpu suites at once on the one GPU; each test under 60 s, inside the step's budget.
  lb ctest --test-dir "$BUILD_DIR" -L gpu --no-tests=error --output-on-failure --timeout 60 \
    -j 6 | tee "$STAGE_DIR/ctest_gpu.log" || rc=1
  # ctest shows a passing test's output nowhere; its LastTest.log has every test's output.
  cp "$BUILD_DIR/Testing/Temporary/LastTest.log" "$STAGE_DIR/ctest_gpu_full.log" 2>/dev/null
  # The failed checks in one place, so that the end of the output (what the device tool returns)
  # shows them even when ctest's own output is long.
  if ((rc != 0)); then
    echo "--- failed checks (doctest's ERROR lines; every test's output: ctest_gpu_full.log) ---"
    grep -E ': (ERROR|FATAL ERROR): ' "$STAGE_DIR/ctest_gpu_full.log" 2>/dev/null | head -n 30
  fi
  # A GPU test that finds no usable device prints SKIPPED and passes: on this machine, a failure.
  local skipped
  skipped=$(grep -v '^Command:' "$STAGE_DIR/ctest_gpu_full.log" 2>/dev/null | grep -c 'SKIPPED')
  if ((skipped > 0)); then
    grep -v '^Command:' "$STAGE_DIR/ctest_gpu_full.log" | grep 'SKIPPED' | head -n 10
    echo "FAIL: the GPU tests printed SKIPPED $skipped times on a GPU machine (the first 10" \
      "above; all in ctest_gpu_full.log)"
    rc=1
  fi
  return $rc
}

# --- generate: 32 greedy tokens of synthetic GPT-2 (bf16, GPU), once per backend -------------
step_generate() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local attn failed=0 rows=$STAGE_DIR/generate.jsonl
  # shellcheck disable=SC2054  # 464,2068 is one argument: the prompt's token ids
  local gen=("$BUILD_DIR/tools/attnscope" generate --model synthetic:gpt2 --prompt-ids 464,2068
             --ignore-eos --json)
  # generate_one WHAT ARGS...: one generate, its JSON appended to the rows, counted if it fails.
  generate_one() {
    within 20 "${gen[@]}" "${@:2}" >>"$rows" && return 0
    echo "generate $1: failed"
    failed=$((failed + 1))
  }
  for attn in naive inplace math fused flash; do
    generate_one "--attn $attn" -n 32 --device cuda --dtype bf16 --attn "$attn"
  done
  generate_one "--attn flash --no-cuda-graphs" -n 32 --device cuda --dtype bf16 --attn flash \
    --no-cuda-graphs
  # The same tokens from the CPU in f32 and the GPU in f32 (greedy, a short prompt): reported
  # by summarize.py, not judged here (two devices may round a near-tie differently).
  generate_one "f32 on the cpu" -n 8 --attn flash
  generate_one "f32 on the gpu" -n 8 --attn flash --device cuda
  # The pick on the host (penalties, logit bias, JSON mode: the logits row copied each step).
  generate_one "JSON mode and penalties on the gpu" -n 32 --device cuda --dtype bf16 \
    --json-object --presence-penalty 0.5 --logit-bias 11:2
  show_rows "$rows"
  ((failed == 0)) || { echo "FAIL: $failed of 9 generate runs failed (above)"; return 1; }
}

# --- bench_attention: every backend at the study's shape, bf16, on the GPU -------------------
step_bench_attention() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local bin=$BUILD_DIR/tools/attnscope rows=$STAGE_DIR/attention.jsonl
  local shape=(--device cuda --dtype bf16 --attn all --batch 8 --heads 16 --seq-len 1024
               --head-dim 64)
  lb "$bin" bench --op attention "${shape[@]}" -r 20 --warmup 3 -o jsonl >>"$rows" || return 3
  lb "$bin" bench --op attention "${shape[@]}" --decode -r 20 --warmup 3 -o jsonl >>"$rows" ||
    return 3
  lb "$bin" bench-attention "${shape[@]}" --reps 20 --warmup 3 || return 3
}

# torch_rows NAME ROWS SECONDS ARGS...: the PyTorch peer, tools/peers/torch_bench.py ARGS within
# SECONDS, its report kept as NAME.json and its rows (one JSON line each) appended to ROWS.
# Returns 0, 3 when it failed or ran out of time, or 2 after saying SKIPPED when this python3
# lacks torch or transformers.
torch_rows() {
  local report=$STAGE_DIR/$1.json rows=$2 seconds=$3 rc=0
  shift 3
  if ! python3 -c "import torch, transformers" 2>/dev/null; then
    echo "SKIPPED: no torch or transformers (the PyTorch rows are missing)"
    return 2
  fi
  within "$seconds" python3 tools/peers/torch_bench.py "$@" --output "$report" || rc=3
  [[ -f $report ]] && python3 -c "import json, sys
for row in json.load(open(sys.argv[1]))['results']:
    print(json.dumps(row))" "$report" >>"$rows"
  return $rc
}
# worse A B: the worse of two step statuses, 0 (pass) < 2 (skipped) < 3 (failed).
worse() { echo $(($1 > $2 ? $1 : $2)); }

# --- torch_attention: PyTorch's SDPA (default and each pinned backend), same shape ----------
step_torch_attention() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  torch_rows torch_attention "$STAGE_DIR/attention.jsonl" 55 --op attention --device cuda \
    --dtype bf16 -b 8 --heads 16 --seq-len 1024 --head-dim 64 -r 20 --warmup 3 || return $?
  # Every row so far, attnscope's and PyTorch's: implementation, backend, median or error.
  python3 -c "import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r.get('implementation'), r.get('backend'), r.get('q_len'), r.get('time_ms_median'),
          r.get('error', ''))" "$STAGE_DIR/attention.jsonl"
}

# --- bench_model: pp512 / tg128 and batch-1 decode per backend, graphs on and off; PyTorch ----
step_bench_model() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local rc=0 attn rows=$STAGE_DIR/model.jsonl
  lb "$BUILD_DIR/tools/attnscope" bench --device cuda --dtype bf16 --attn all -p 512 -n 128 -r 3 \
    -o jsonl >>"$rows" || rc=3
  # The Llama family's one decode benchmark: SmolLM2-135M (grouped-query attention, 9 / 3 heads).
  lb "$BUILD_DIR/tools/attnscope" bench --model synthetic:smollm2-135m --device cuda --dtype bf16 \
    --attn flash -p 512 -n 128 -r 3 -o jsonl >>"$rows" || rc=3
  # Decode tokens/s with CUDA graphs on (the default) and off, per backend.
  for attn in naive inplace math fused flash; do
    for graphs in "" --no-cuda-graphs; do
      within 30 "$BUILD_DIR/tools/attnscope" generate --model synthetic:gpt2 \
        --prompt-ids 464,2068 -n 128 --ignore-eos --device cuda --dtype bf16 --attn "$attn" \
        $graphs --json >>"$rows" || rc=3
    done
  done
  torch_rows torch_model "$rows" 50 --device cuda --dtype bf16 --attn eager,sdpa -p 512 -n 128 \
    -r 3 || rc=$(worse $rc $?)
  show_rows "$rows"
  return $rc
}

# --- flash_sweep: flash prefill TFLOP/s at head dims 64 and 128, causal bf16, T 1k-16k -------
# FlashAttention's benchmark setting (the FA2 and FA3 papers' figures): 16k tokens per call
# (B = 16384 / T) and a model width of 2048 (H = 2048 / D). attnscope's flash, then PyTorch's SDPA
# pinned to FLASH_ATTENTION and CUDNN_ATTENTION at the same shapes; rows into sweep.jsonl, whose
# table (TFLOP/s against issue 23's FlashAttention-2 level) summarize.py prints.
step_flash_sweep() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local rc=0 rows=$STAGE_DIR/sweep.jsonl d t torch_shapes=()
  for d in 64 128; do
    for t in 1024 2048 4096 8192 16384; do
      lb "$BUILD_DIR/tools/attnscope" bench --op attention --attn flash --device cuda \
        --dtype bf16 -b $((16384 / t)) --heads $((2048 / d)) --seq-len "$t" --head-dim "$d" \
        -r 10 --warmup 2 -o jsonl >>"$rows" || rc=3
      torch_shapes+=(--shape "$((16384 / t))x$((2048 / d))x${t}x$d")
    done
  done
  torch_rows torch_sweep "$rows" 50 --op attention --device cuda --dtype bf16 \
    --sdpa sdpa-flash_attention,sdpa-cudnn_attention "${torch_shapes[@]}" -r 10 --warmup 2 ||
    rc=$(worse $rc $?)
  python3 -c "import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r.get('implementation'), r.get('backend'), 'D', r.get('head_dim'), 'T', r.get('q_len'),
          'TFLOP/s', round(r['gflops'] / 1e3, 1) if r.get('gflops') else r.get('error'))" "$rows"
  return $rc
}

# --- decode_targets: batch-1 bf16 decode against issue 23's targets, long enough to time -----
# GPT-2 124M (target 10,000 tokens/s) and Llama 3.2 1B's shape (target 1,000), flash with the
# replayed decode graph, three runs each (summarize.py gives the median), and once with graphs
# off; PyTorch's Llama 3.2 1B shape beside (rows into model.jsonl); last, the Llama step profiled
# as a graph (profile/profile_llama_graphs.json and .txt: kernels, busy and idle time per step).
step_decode_targets() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local rc=0 rows=$STAGE_DIR/model.jsonl run
  # shellcheck disable=SC2054  # 464,2068 is one argument: the prompt's token ids
  local gen=("$BUILD_DIR/tools/attnscope" generate --prompt-ids 464,2068 --ignore-eos --json
             --device cuda --dtype bf16 --attn flash)
  for run in 1 2 3; do
    within 20 "${gen[@]}" --model synthetic:gpt2 -n 1000 >>"$rows" || rc=3
  done
  for run in 1 2 3; do
    within 40 "${gen[@]}" --model synthetic:llama-3.2-1b -n 512 >>"$rows" || rc=3
  done
  within 40 "${gen[@]}" --model synthetic:llama-3.2-1b -n 512 --no-cuda-graphs >>"$rows" || rc=3
  torch_rows torch_llama "$rows" 60 --model llama-3.2-1b --device cuda --dtype bf16 --attn sdpa \
    -p 0 -n 128 -r 3 || rc=$(worse $rc $?)
  # Where a Llama step launched as a graph spends its GPU time (kernels, busy, idle; summarize.py's
  # table). Under the profiler every step is captured anew (its graph sized for the step, not for
  # the capacity as in the replayed one): the same launches, a smaller split-KV grid.
  local profile=$STAGE_DIR/profile/profile_llama_graphs
  mkdir -p "$STAGE_DIR/profile"
  within 30 "$BUILD_DIR/tools/attnscope" profile --model synthetic:llama-3.2-1b --device cuda \
    --dtype bf16 --attn flash --prompt-len 64 --gen 8 --steps decode --cuda-graphs \
    --json "$profile.json" --summary >"$profile.txt" || rc=3
  grep -E "steps on the GPU|profiling overhead" "$profile.txt"
  grep -q "steps on the GPU" "$profile.txt" || rc=3  # missing: CUPTI did not start, or it failed
  show_rows "$rows"
  return $rc
}

# --- profile: CUPTI profiles on the GPU and the compare report (the study on the real model) --
# The model's trace and summary (32 decode steps, profiled in the pattern P U U P, so that the
# profiling overhead on decode is measured over 16 steps each way), the attention op's
# CUPTI-vs-event fidelity table, and `compare`'s report (Markdown, JSON, SVG charts), all under
# profile/ in the archive.
step_profile() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local dir=$STAGE_DIR/profile rc=0 bin=$BUILD_DIR/tools/attnscope
  mkdir -p "$dir"
  lb "$bin" profile --model synthetic:gpt2 --device cuda --dtype bf16 --attn flash \
    --prompt-len 128 --gen 32 --trace "$dir/trace_gpu.json" --json "$dir/profile_gpu.json" \
    --summary || rc=3
  # The same decode steps replayed as CUDA graphs, each replayed kernel given its op's scope.
  lb "$bin" profile --model synthetic:gpt2 --device cuda --dtype bf16 --attn flash \
    --prompt-len 128 --gen 32 --cuda-graphs --trace "$dir/trace_gpu_graphs.json" \
    --json "$dir/profile_gpu_graphs.json" --summary || rc=3
  lb "$bin" profile --op attention --attn fused --device cuda --dtype bf16 --fidelity --summary \
    --json "$dir/fidelity.json" >"$dir/fidelity.txt" || rc=3
  cat "$dir/fidelity.txt"
  lb "$bin" compare --model synthetic:gpt2 --device cuda --dtype bf16 --prompt-lens 128,512 \
    --gen 8 --reps 3 --out "$dir/compare" || rc=3
  head -n 40 "$dir/compare/report.md" 2>/dev/null
  return $rc
}

# --- study: the seed study's experiment on the GPU -------------------------------------------
# `attnscope study` at the study's shape (B=8 H=16 T=1024 D=64, causal) in bf16: every backend's
# prediction, the kernels CUPTI saw, timings with intervals (at least 5 rounds, more within 15 s
# until the deciding intervals are under 5%), the A100 numbers beside them, a trace per backend;
# all under study/ in the archive.
step_study() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local dir=$STAGE_DIR/study rc=0
  lb "$BUILD_DIR/tools/attnscope" study --device cuda --dtype bf16 --reps 5 --budget-s 15 \
    --out "$dir" >/dev/null || rc=3
  sed -n '/## 2. The observation/,/## 4./p' "$dir/report.md" 2>/dev/null
  return $rc
}

# --- explain: why each backend wins on the GPU, and where bf16 diverges from f32 -------------
# `attnscope explain` at the study's shape in bf16 (each backend's plan against the kernels CUPTI
# saw, FLOP/s, intensity, share of the roofline measured on the H200, roofline.svg), and
# `attnscope diverge` of GPT-2 bf16 flash on the GPU against f32 naive on the CPU (per layer and
# head, a heat map); all under explain/ in the archive. Last in stage 2: it runs with what is left.
step_explain() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  local dir=$STAGE_DIR/explain rc=0
  mkdir -p "$dir"
  ATTNSCOPE_CACHE_DIR=$dir lb "$BUILD_DIR/tools/attnscope" explain --device cuda --dtype bf16 \
    --json "$dir/explain.json" --roofline "$dir/roofline.svg" >"$dir/explain.txt" || rc=3
  lb "$BUILD_DIR/tools/attnscope" diverge --model synthetic:gpt2 --prompt-len 64 --attn flash \
    --device cuda --dtype bf16 --against naive --against-device cpu --against-dtype f32 \
    --json "$dir/diverge.json" --heatmap "$dir/diverge.svg" >"$dir/diverge.txt" || rc=3
  # The same model in f32 on both devices: the GPU path (attention tap, logit lens) must agree
  # with the CPU's to f32 rounding: a final KL under 1e-6 nats (flips are printed).
  lb "$BUILD_DIR/tools/attnscope" diverge --model synthetic:gpt2 --prompt-len 64 --attn flash \
    --device cuda --dtype f32 --against naive --against-device cpu --against-dtype f32 \
    --json "$dir/diverge_f32.json" >"$dir/diverge_f32.txt" || rc=3
  python3 -c "import json, sys
r = json.load(open(sys.argv[1]))
ok = r['kl_max'] < 1e-6  # a logit-lens flip at a near tie is reported, not failed
print('diverge f32 gpu against f32 cpu: kl_max', r['kl_max'], 'first flip', r['first_flip_layer'],
      'PASS' if ok else 'FAIL')
sys.exit(0 if ok else 1)" "$dir/diverge_f32.json" || rc=3
  head -n 60 "$dir/explain.txt"
  head -n 30 "$dir/diverge.txt"
  return $rc
}

# --- compute-sanitizer: SANITIZER SUITE FILTER: one suite's matching tests under one tool ----
# Returns 0 clean, 1 errors (or a test failed), 2 the tool refused the device, 124 timed out.
sanitize() {
  local tool=$1 suite=$2 filter=$3 log=$4 rc=0
  echo "== compute-sanitizer --tool $tool $suite -tc=\"$filter\"" | tee -a "$log"
  within 80 compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 \
    "$BUILD_DIR/tests/$suite" -tc="$filter" >>"$log" 2>&1 || rc=$?
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$log" | tail -n 1
  # Seen on gVisor machines (KINDS.md): the tool refuses the device. That is the sandbox.
  grep -q "Device not supported" "$log" && return 2
  # No silent pass: a filter that matches no test case would check nothing.
  local cases
  cases=$(grep -o 'test cases: *[0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$')
  if [[ $rc -eq 0 && ${cases:-0} -eq 0 ]]; then
    echo "FAIL: -tc=\"$filter\" ran no test case of $suite"
    return 1
  fi
  case $rc in
    0) return 0 ;;
    124 | 137) echo "(timed out: partial run)"; return 124 ;;
    *) return 1 ;;
  esac
}

# --- memcheck: the attention and flash kernels, the paged ones (gather, scatter, flash_paged,
# split_qkv_paged), and the Llama family's rms_norm, swiglu, rotary and grouped split_qkv kernels
# (their correctness tests), under memcheck -----------------------------------------------------
step_memcheck() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  have compute-sanitizer || { echo "SKIPPED: compute-sanitizer not installed"; return 2; }
  local log=$STAGE_DIR/sanitizer.log rc=0 r
  : >"$log"
  for run in "test_cuda_attention|*matches float64*" \
             "test_cuda_flash|*matches float64*,*split-KV*" \
             "test_cuda_paged|*cuda paged attention*,*split_qkv_paged*" \
             "test_cuda_ops|*rms_norm*,*swiglu*,*rotary_embedding*,*split_qkv*"; do
    sanitize memcheck "${run%%|*}" "${run#*|}" "$log"
    r=$?
    case $r in
      0) ;;
      2) echo "SKIPPED: compute-sanitizer does not support the device on this runtime"; return 2 ;;
      *) rc=1 ;;
    esac
  done
  tail -n 40 "$log"
  return $rc
}

# --- racecheck: flash prefill under racecheck; informational on this first run ---------------
# cp.async and ldmatrix traffic can be reported as hazards that are not races: record, judge later.
step_racecheck() {
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  built || { echo "SKIPPED: no build"; return 2; }
  have compute-sanitizer || { echo "SKIPPED: compute-sanitizer not installed"; return 2; }
  local log=$STAGE_DIR/racecheck.log r
  : >"$log"
  sanitize racecheck test_cuda_flash "*matches float64 attention in prefill*" "$log"
  r=$?
  tail -n 40 "$log"
  case $r in
    0) return 0 ;;
    2) echo "SKIPPED: compute-sanitizer does not support the device on this runtime"; return 2 ;;
    *) return 3 ;;
  esac
}

# === the runner =================================================================================

# shellcheck disable=SC2046  # one function name per word
export -f have has_gpu built within lb show_rows source_stamp build_is_current configure_flags \
  torch_rows worse sanitize $(compgen -A function step_)

# say TEXT: to the console and check.log.
say() { printf '%s\n' "$*" | tee -a "$CHECK_LOG"; }
# record NAME STATUS SECONDS NOTE: one line of summary.txt, appended at once (each printf is
# one write, so the line is on disk even if the call is killed right after).
declare -A status_of=()
record() {
  status_of[$1]=$2
  printf '%-16s %-18s %5ss  %s\n' "$1" "$2" "$3" "$4" >>"$SUMMARY"
}
# pack: the scratch folder into $ARCHIVE, replaced whole (a half-written archive is never left
# under the final name), with a copy of summary.txt.
pack() {
  cp "$SUMMARY" "$STAGE_DIR/summary.txt"  # so that the archive describes itself
  tar -czf "$ARCHIVE.part" -C "$SCRATCH" "$STAGE" 2>/dev/null && mv -f "$ARCHIVE.part" "$ARCHIVE"
}

# The verdict from the recorded statuses (see the header); sets verdict and exit_code.
decide() {
  local name st failed=() skipped=()
  for name in "${steps[@]}"; do
    st=${status_of[$name]:-NOT-RUN}
    case $st in
      PASS | INFO-FAIL*) ;;
      SKIP) skipped+=("$name") ;;
      NOT-RUN*) [[ $informational == *" $name "* ]] || failed+=("$name:$st") ;;
      *) if [[ $st == TIMEOUT* && $informational == *" $name "* ]]; then :; else
           failed+=("$name:$st"); fi ;;
    esac
  done
  if [[ $HAS_GPU == 1 ]]; then
    [[ $NVCC == none ]] && failed+=("no-nvcc")
    [[ ${#skipped[@]} -gt 0 ]] && failed+=("skipped-on-a-GPU-machine:${skipped[*]}")
    if [[ ${#failed[@]} -eq 0 ]]; then
      verdict="PASSED"; exit_code=0
    else
      verdict="FAILED (${failed[*]})"; exit_code=1
    fi
  elif [[ ${#failed[@]} -gt 0 ]]; then
    verdict="FAILED (${failed[*]})"; exit_code=1
  else
    verdict="DRY RUN: no GPU here, ${#skipped[@]} GPU steps skipped (${skipped[*]})"
    [[ $NVCC == none ]] && verdict+=", no nvcc"
    verdict+="; on a GPU machine this state would be FAILED"
    exit_code=0
  fi
}

# At exit, however the script ends (done, a signal, an error): the verdict, the archive, and the
# tails of what failed, with the summary last (the device tool returns the end of the output).
current=""
finish() {
  trap - EXIT
  if [[ -n $current ]]; then  # stopped inside a step: end it, keep what it printed so far
    stop_step
    tail -c "+$((offset + 1))" "$CHECK_LOG" >"$LOG_DIR/$current.log"
    record "$current" "INTERRUPTED" $((SECONDS - step_start)) "the stage was stopped here"
  fi
  decide
  printf 'device check %s: %s\n' "$STAGE" "$verdict" >>"$SUMMARY"
  pack
  local name st
  for name in "${steps[@]}"; do
    st=${status_of[$name]:-}
    if [[ $st == FAIL* || $st == TIMEOUT* || $st == INTERRUPTED || $st == INFO-FAIL* ]]; then
      say ""
      say "----- the end of $name's output ($st; all of it: check.log, $STAGE/logs/$name.log) -----"
      tail -n 40 "$LOG_DIR/$name.log" | tee -a "$CHECK_LOG"
    fi
  done
  say ""
  say "===== summary: $STAGE on $(hostname), GPU: $GPU_NAME, nvcc: $NVCC, ${SECONDS}s ====="
  tee -a "$CHECK_LOG" <"$SUMMARY"
  say "files in $OUT: $(find "$OUT" -maxdepth 1 -type f -printf '%f ')"
  rm -rf "$SCRATCH"
  exit "$exit_code"
}
# stop_step: ends the running step. Its `timeout` passes TERM on to the step's process group
# and sends KILL 10 s later to whatever is left, so the wait is bounded.
step_pid=""
stop_step() {
  [[ -n $step_pid ]] || return 0
  kill -TERM "$step_pid" 2>/dev/null
  wait "$step_pid" 2>/dev/null
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

printf 'attnscope device check %s: started %s UTC on %s, GPU: %s, nvcc: %s, budget %ss\n' \
  "$STAGE" "$(date -u '+%F %T')" "$(hostname)" "$GPU_NAME" "$NVCC" "$CHECK_BUDGET_S" >>"$SUMMARY"
printf '%-16s %-18s %6s  %s\n' step status time note >>"$SUMMARY"

# Time set aside for the required steps after position $1 of the list.
reserved_after() {
  local i sum=0
  for ((i = $1 + 1; i < ${#steps[@]}; i++)); do
    [[ $informational == *" ${steps[i]} "* ]] || sum=$((sum + ${budget[${steps[i]}]:-60}))
  done
  echo "$sum"
}

for index in "${!steps[@]}"; do
  name=${steps[index]}
  log=$LOG_DIR/$name.log
  left=$((CHECK_BUDGET_S - SECONDS))
  limit=${budget[$name]:-60}
  if [[ $informational == *" $name "* ]]; then
    # An informational step may not eat into what the later required steps need.
    room=$((left - $(reserved_after "$index")))
  else
    room=$left
  fi
  ((limit > room)) && limit=$room
  if ((limit < 10)); then
    say "===== $name: not run: ${left}s left of the stage's ${CHECK_BUDGET_S}s, less what the" \
      "required steps after it need ====="
    record "$name" "NOT-RUN(budget)" 0 "no time left"
    continue
  fi
  say ""
  say "===== $name (at most ${limit}s) ====="
  current=$name
  step_start=$SECONDS
  # Each step runs in its own bash under `timeout`, which ends the step's whole process group;
  # -k 10 sends KILL to what ignores TERM. Its output goes straight to check.log, a file opened
  # for appending (no pipe: nothing left running can hold the runner up), and is copied to the
  # step's own log and the console once the step has ended.
  # It runs in the background and the runner waits for it, so that a signal to the runner is
  # handled at once (see stop_step) rather than when the step ends.
  offset=$(stat -c %s "$CHECK_LOG")
  timeout -k 10 "$limit" bash -o pipefail -c "step_$name" >>"$CHECK_LOG" 2>&1 </dev/null &
  step_pid=$!
  wait "$step_pid"
  rc=$?
  step_pid=""
  tail -c "+$((offset + 1))" "$CHECK_LOG" >"$log"
  cat "$log"
  current=""
  case $rc in
    0) st=PASS ;;
    2) st=SKIP ;;
    3) st=INFO-FAIL ;;
    124 | 137) st="TIMEOUT(${limit}s)" ;;
    *) st="FAIL(rc=$rc)"; [[ $informational == *" $name "* ]] && st="INFO-FAIL(rc=$rc)" ;;
  esac
  note=$(grep -m1 -E '^(SKIPPED|REUSED|NOTE|FAIL):' "$log" | cut -c1-110)
  record "$name" "$st" $((SECONDS - step_start)) "$note"
  pack
  # Nothing after a failed configure or build can run.
  if [[ $rc -ne 0 && ($name == configure || $name == build) ]]; then
    say "(stopped: $name failed)"
    break
  fi
done
