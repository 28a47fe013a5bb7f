#!/usr/bin/env bash
# Packs the build dependencies that the lent GPU machine lacks (it has no apt and no internet)
# into .deps/ at the repository root, from this machine's Debian packages (tools/setup.sh):
#
#   .deps/include/eigen3/Eigen/   Eigen's core headers (the code includes <Eigen/Core> only)
#   .deps/include/doctest/        doctest
#   .deps/include/CLI/            CLI11
#   .deps/include/nlohmann/       nlohmann-json
#   .deps/include/pcre2.h         PCRE2's header
#   .deps/include/utf8proc.h      utf8proc's header
#   .deps/lib/libpcre2-8.so.0     PCRE2's 8-bit shared library and utf8proc's, real files (the
#   .deps/lib/libutf8proc.so.2    device tool may not carry symbolic links), named by soname
#
# CMake reads the folder when configured with -DATTNSCOPE_DEPS_DIR=$PWD/.deps
# (cmake/dependencies.cmake). The device tool carries it with carry [".deps"]; see
# tools/device/check.sh. .deps/ is git-ignored; rerun this script after tools/setup.sh changes.
set -euo pipefail
cd "$(dirname "$0")/../.."

include=/usr/include
libdir=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
for path in "$include/eigen3/Eigen/Core" "$include/doctest/doctest.h" "$include/CLI/CLI.hpp" \
            "$include/nlohmann/json.hpp" "$include/pcre2.h" "$libdir/libpcre2-8.so.0" \
            "$include/utf8proc.h" "$libdir/libutf8proc.so.2"; do
  if [[ ! -e "$path" ]]; then
    echo "pack_deps: $path is missing; run tools/setup.sh first" >&2
    exit 1
  fi
done

rm -rf .deps
mkdir -p .deps/include/eigen3 .deps/lib
# -L copies what links point to, so .deps holds real files only.
cp -rL "$include/eigen3/Eigen" .deps/include/eigen3/
cp -rL "$include/doctest" "$include/CLI" "$include/nlohmann" .deps/include/
cp -L "$include/pcre2.h" "$include/utf8proc.h" .deps/include/
cp -L "$libdir/libpcre2-8.so.0" .deps/lib/libpcre2-8.so.0
cp -L "$libdir/libutf8proc.so.2" .deps/lib/libutf8proc.so.2

links=$(find .deps -type l | wc -l)
if [[ $links -ne 0 ]]; then
  echo "pack_deps: .deps holds $links symbolic links; the device tool may not carry them" >&2
  exit 1
fi
echo "pack_deps: .deps is $(du -sh .deps | cut -f1) ($(find .deps -type f | wc -l) files);" \
     "the device tool carries at most 64 MiB in all"
