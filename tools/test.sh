#!/usr/bin/env bash
# The test suite, as CI runs it: dependencies, a Release build with every doctest suite, then one
# clang build with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer instrumentation
# that runs the same suites and a short libFuzzer run of each harness (safetensors reader, config
# reader, tokenizer). One sanitizer build serves both to keep CI's compile time down.
#
#   tools/test.sh            everything (23-31 minutes in five runs on 2 cores of a Zen 3, whose
#                            speed drifts by a quarter: the Release build, CUDA kernels included,
#                            8-13; its tests 1; the sanitizer build 7-10; its tests 5-6; the
#                            fuzzers 2. 35 there before the sanitizer build was a unity build and
#                            the fuzzers ran side by side; 15 then on an Emerald Rapids Xeon)
#   tools/test.sh --quick    the Release build and its tests only
#
# Build folders: build/ (Release), build-asan/ (clang, sanitizers, fuzzers). FUZZ_SECONDS sets
# each fuzzer's run (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
jobs=$(nproc)

if [[ $quick -eq 1 ]]; then tools/setup.sh; else tools/setup.sh --fuzz; fi
# OpenAI's Python client, for the server suite's test that drives `attnscope serve` as a user
# would (that test says SKIPPED without it). From PyPI; a machine without it still tests all else.
if ! python3 -c 'import openai' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check 'openai>=1.0' ||
    echo "-- the openai package could not be installed: test_serve's client test will skip"
fi
# NumPy and pytest, for test_python (`import attnscope`, python/); from PyPI as well.
if ! python3 -c 'import numpy, pytest' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check numpy pytest ||
    echo "-- numpy or pytest could not be installed: test_python will say SKIPPED"
fi

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
# Without a usable GPU the GPU suites (label gpu) pass with each GPU test printing "SKIPPED: why"
# (ctest shows no passing test's output): say so here, once.
if skipped=$(grep -m1 -o 'SKIPPED: no usable CUDA device.*' build/Testing/Temporary/LastTest.log); then
  echo "-- $skipped"
  echo "-- the GPU suites (label gpu) ran their host-side checks only; tools/device/check.sh runs them on a GPU"
fi
[[ $quick -eq 1 ]] && exit 0

echo "== ASan + UBSan build (clang, with the libFuzzer harnesses) and tests"
# -O1 with line tables: a faster compile than -O2 -g, enough for readable sanitizer stacks (-O1
# does not vectorize, so clang's note that an `omp simd` loop was not is silenced).
# A unity build (each target's sources compiled a batch at a time; ops/ opts out): most of a tool
# or test file's compile is the same CLI11, nlohmann-json, cpp-httplib and doctest code, which a
# batch compiles once. The Release build above keeps one translation unit per file, so a file
# that leans on another's includes still fails CI.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNSCOPE_SANITIZE=ON \
  -DATTNSCOPE_FUZZ=ON -DATTNSCOPE_CUDA=OFF -DATTNSCOPE_PYTHON=OFF -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG -Wno-pass-failed" \
  -DCMAKE_UNITY_BUILD=ON
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== libFuzzer harnesses"
seconds=${FUZZ_SECONDS:-20}
harnesses=(safetensors config chat_template chat_reply json_mode json_schema tokenizer_json
  tokenizer_json_load)
tokenizer_dir=${ATTNSCOPE_FIXTURES_DIR:-../shared/fixtures}/gpt2-tokenizer
if [[ -f "$tokenizer_dir/encoder.json" ]]; then
  harnesses+=(tokenizer)
else
  echo "-- SKIPPED fuzz_tokenizer: GPT-2 vocabulary not found at $tokenizer_dir"
fi
# One harness per core at a time, each on a copy of its corpus, its output in build-asan/.
fuzz() {
  local corpus status=0
  corpus=$(mktemp -d)
  cp tests/fuzz/corpus/"$1"/* "$corpus"/
  ATTNSCOPE_TOKENIZER_DIR="$tokenizer_dir" build-asan/tests/fuzz/fuzz_"$1" \
    -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix=build-asan/ "$corpus" \
    > build-asan/fuzz_"$1".log 2>&1 || status=$?
  rm -rf "$corpus"
  return "$status"
}
pids=()
for harness in "${harnesses[@]}"; do
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
  fuzz "$harness" &
  pids+=($!)
done
failed=()
for i in "${!harnesses[@]}"; do
  lines=3
  wait "${pids[$i]}" || { failed+=("fuzz_${harnesses[$i]}"); lines=60; }
  echo "-- fuzz_${harnesses[$i]} for ${seconds}s"
  tail -n "$lines" build-asan/fuzz_"${harnesses[$i]}".log || true
done
if (( ${#failed[@]} > 0 )); then
  echo "FAILED: ${failed[*]} (whole logs: build-asan/fuzz_NAME.log)"
  exit 1
fi
echo "tests: all passed"
