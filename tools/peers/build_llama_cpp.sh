#!/usr/bin/env bash
# Builds llama.cpp's llama-server, llama-bench and llama-quantize (CPU, native) from the copy of
# llama.cpp that ships inside the llama-cpp-python sdist on PyPI, the peer that issue 27's serving
# benchmark and issue 29's decode table run against. Nothing is fetched but the sdist itself.
#
#   tools/peers/build_llama_cpp.sh [WORK_DIR]     (default: build/peers)
#
# Leaves WORK_DIR/llama.cpp (the source, with convert_hf_to_gguf.py and gguf-py) and
# WORK_DIR/llama.cpp/build/bin/{llama-server,llama-bench,llama-quantize}. Takes ~15 minutes on
# two cores. LLAMA_CPP_PYTHON_VERSION picks the sdist (default: the one TARGETS.md was measured
# with).
set -euo pipefail

work_dir=${1:-build/peers}
version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
mkdir -p "$work_dir"
work_dir=$(cd "$work_dir" && pwd)

sdist="$work_dir/llama_cpp_python-$version.tar.gz"
if [[ ! -f $sdist ]]; then
    python3 -m pip download --no-deps --no-binary :all: -d "$work_dir" "llama-cpp-python==$version"
fi
source_dir="$work_dir/llama.cpp"
if [[ ! -f $source_dir/CMakeLists.txt ]]; then
    tar -xzf "$sdist" -C "$work_dir"
    mv "$work_dir/llama_cpp_python-$version/vendor/llama.cpp" "$source_dir"
    rm -rf "$work_dir/llama_cpp_python-$version"
fi

# No web UI (it would be downloaded), no HTTPS, no curl: the peer runs offline on loopback.
cmake -S "$source_dir" -B "$source_dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
cmake --build "$source_dir/build" --target llama-server llama-bench llama-quantize \
    -j "$(nproc)"
echo "llama.cpp built: $source_dir/build/bin"
