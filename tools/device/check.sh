#!/usr/bin/env bash
# The device check: the one script to run on the lent GPU machine (one H200, CUDA 13, CMake,
# ninja; no apt, no internet). It builds attnscope there against the packed dependencies, runs
# every test, the CUPTI test, compute-sanitizer, and a few informational runs, then prints a
# summary table last (the device tool returns the end of the output).
#
# How to call it (device time is 15 minutes per session, so prepare everything here first):
#   1. Here:  tools/device/pack_deps.sh                 (fills .deps/, about 9 MB, git-ignored)
#   2. Here:  OUT=/tmp/out bash tools/device/check.sh   (dry run: GPU steps skip with a message)
#   3. Device tool `run`: command "bash tools/device/check.sh", carry [".deps"], timeout_s 500.
#      Logs come back from $OUT (at most 8 files return: keep the list below short).
#   4. Call give_back unless you rerun at once.
#
# Files written under $OUT: check.log (everything), summary.txt, ctest.log,
# profile_export.log, bench_attention.json, generate.jsonl.
#
# Exit status: non-zero when configure, build, a test, the CUPTI test or compute-sanitizer's
# memcheck fails. Informational steps (bench, generate) are reported but never fail the check.
#
# Environment: OUT (default /tmp/attnscope-check), BUILD_DIR (default build-device),
# CHECK_STEPS (a space-separated subset of the steps below, default all), ATTNSCOPE_NATIVE
# (default ON: the binaries are built and run on the same machine, so -march=native is right
# there and makes the informational CPU numbers those of a normal local build).
#
# Adding a step (a GPU kernel test or benchmark): write a function step_NAME that returns
# 0 (pass), 1 (fail), 2 (skipped; print why) or 3 (informational failure), add NAME to
# `steps`, and give it a timeout in `timeouts`. Keep the whole run well under 8 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."

OUT=${OUT:-/tmp/attnscope-check}
BUILD_DIR=${BUILD_DIR:-build-device}
DEPS_DIR=$PWD/.deps
JOBS=$(nproc)
mkdir -p "$OUT"
exec > >(tee "$OUT/check.log") 2>&1

steps=(env configure build ctest ctest_gpu profile_export sanitizer bench_attention generate)
declare -A timeouts=([env]=30 [configure]=120 [build]=360 [ctest]=300 [ctest_gpu]=300
                     [profile_export]=120 [sanitizer]=180 [bench_attention]=180 [generate]=120)
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

# --- build: every target, all cores ---------------------------------------------------------
step_build() { cmake --build "$BUILD_DIR" -j "$JOBS"; }

# --- ctest: every test ------------------------------------------------------------------------
step_ctest() {
  built || { echo "SKIPPED: no build"; return 2; }
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" 2>&1 | tee "$OUT/ctest.log"
}

# --- ctest_gpu: the tests labelled gpu, alone (so their output is easy to find) -------------
step_ctest_gpu() {
  built || { echo "SKIPPED: no build"; return 2; }
  local count
  count=$(ctest --test-dir "$BUILD_DIR" -N -L gpu | sed -n 's/^Total Tests: //p')
  if [[ "${count:-0}" -eq 0 ]]; then echo "SKIPPED: no test is labelled gpu yet"; return 2; fi
  has_gpu || { echo "SKIPPED: no GPU (nvidia-smi absent or sees none)"; return 2; }
  ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure
}

# --- profile_export: the doctest suite holding the CUPTI test (runs only with a device) ------
step_profile_export() {
  built || { echo "SKIPPED: no build"; return 2; }
  "$BUILD_DIR/tests/test_profile_export" --success=false 2>&1 | tee "$OUT/profile_export.log"
  local rc=${PIPESTATUS[0]}
  if grep -q "SKIPPED: no CUDA device" "$OUT/profile_export.log"; then
    echo "note: the CUPTI test skipped (no CUDA device)"
  fi
  return "$rc"
}

# --- sanitizer: compute-sanitizer memcheck over the same suite -------------------------------
step_sanitizer() {
  built || { echo "SKIPPED: no build"; return 2; }
  have compute-sanitizer || { echo "SKIPPED: compute-sanitizer not installed"; return 2; }
  has_gpu || { echo "SKIPPED: no GPU"; return 2; }
  local log=$OUT/sanitizer.tmp
  compute-sanitizer --tool memcheck --error-exitcode 99 "$BUILD_DIR/tests/test_profile_export" \
    2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  # Seen on gVisor machines (KINDS.md): the tool refuses the device. That is the sandbox, not us.
  if [[ $rc -ne 0 ]] && grep -q "Device not supported" "$log"; then
    echo "SKIPPED: compute-sanitizer does not support the device on this runtime"; rc=2
  fi
  rm -f "$log"
  return "$rc"
}

# --- bench_attention: the study's shape on this machine's CPU (informational) ----------------
step_bench_attention() {
  built || { echo "SKIPPED: no build"; return 2; }
  "$BUILD_DIR/tools/attnscope" bench-attention --output json >"$OUT/bench_attention.json" || return 3
  head -c 2000 "$OUT/bench_attention.json"; echo
}

# --- generate: 16 greedy tokens of synthetic GPT-2 per attention backend (informational) -----
step_generate() {
  built || { echo "SKIPPED: no build"; return 2; }
  local attn rc=0
  : >"$OUT/generate.jsonl"
  for attn in naive inplace math fused flash; do
    if ! "$BUILD_DIR/tools/attnscope" generate --model synthetic:gpt2 --prompt-ids 464,2068 \
        -n 16 --attn "$attn" --json >>"$OUT/generate.jsonl"; then
      echo "generate --attn $attn failed"; rc=3
    fi
  done
  cat "$OUT/generate.jsonl"
  return $rc
}

# --- run every step, then the summary ---------------------------------------------------------
export -f have has_gpu built $(compgen -A function step_)
summary=()
failed=0
for name in "${steps[@]}"; do
  echo; echo "===== $name ====="
  start=$SECONDS
  # Each step runs in its own bash under `timeout`, which ends the step's whole process group.
  timeout "${timeouts[$name]:-120}" bash -o pipefail -c "step_$name"; rc=$?
  case $rc in
    0) status=PASS ;;
    2) status=SKIP ;;
    3) status=INFO-FAIL ;;
    124) status="TIMEOUT(${timeouts[$name]:-120}s)"; failed=1 ;;
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
