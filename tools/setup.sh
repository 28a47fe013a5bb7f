#!/usr/bin/env bash
# Installs what attnscope needs to build and test, from Debian packages. Idempotent: it installs
# only what is missing. Run as root it installs; otherwise it prints the exact apt-get line to
# run and exits 1. The CUDA toolkit is optional and not installed here (CMake finds nvcc when
# present).
#
#   tools/setup.sh           build + test dependencies (g++, CMake, Ninja, Eigen, doctest, ...)
#   tools/setup.sh --fuzz    also clang with libFuzzer and OpenMP, for tests/fuzz
set -euo pipefail

packages=(g++ cmake ninja-build pkg-config libeigen3-dev doctest-dev libcli11-dev
          nlohmann-json3-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev pybind11-dev)
if [[ "${1:-}" == "--fuzz" ]]; then
  packages+=(clang libclang-rt-14-dev libomp-14-dev)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all dependencies present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "setup: missing packages; run as root:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
