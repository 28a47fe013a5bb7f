# Where attnscope's dependencies come from: the one place that says so.
#
#   ATTNSCOPE_DEPS_DIR empty (default): the system, i.e. the Debian packages that tools/setup.sh
#     installs, found through their CMake package files and pkg-config.
#   ATTNSCOPE_DEPS_DIR=/path/.deps: a self-contained folder made by tools/device/pack_deps.sh,
#     for machines with no package manager (the lent GPU machine). Layout:
#       include/eigen3/Eigen/  include/doctest/  include/CLI/  include/nlohmann/  include/pcre2.h
#       include/utf8proc.h
#       lib/libpcre2-8.so.0  lib/libutf8proc.so.2   (real files, not links)
#
# Either way the code links the same target names: Eigen3::Eigen, doctest::doctest,
# CLI11::CLI11, nlohmann_json::nlohmann_json, attnscope::pcre2 (PCRE2's 8-bit library),
# attnscope::utf8proc (Unicode normalization for tokenizers) and OpenMP::OpenMP_CXX (always the
# compiler's own, from the system). From the system only:
# attnscope::httplib (cpp-httplib, Debian's libcpp-httplib-dev, for `attnscope serve`); without
# it (a dependency folder) the build has no HTTP server and `serve` says so.

set(ATTNSCOPE_DEPS_DIR "" CACHE PATH
    "Take the dependencies from this folder (made by tools/device/pack_deps.sh), not the system")

find_package(OpenMP REQUIRED COMPONENTS CXX)

if(ATTNSCOPE_DEPS_DIR STREQUAL "")
  find_package(Eigen3 3.4 REQUIRED NO_MODULE)
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(CLI11 2.1 REQUIRED)
  find_package(doctest REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
  add_library(attnscope::pcre2 ALIAS PkgConfig::PCRE2)
  pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
  add_library(attnscope::utf8proc ALIAS PkgConfig::UTF8PROC)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
  add_library(attnscope::httplib ALIAS PkgConfig::HTTPLIB)
else()
  set(deps "${ATTNSCOPE_DEPS_DIR}")
  message(STATUS "attnscope: dependencies from ${deps}")
  foreach(required include/eigen3/Eigen/Core include/doctest/doctest.h include/CLI/CLI.hpp
                   include/nlohmann/json.hpp include/pcre2.h lib/libpcre2-8.so.0
                   include/utf8proc.h lib/libutf8proc.so.2)
    if(NOT EXISTS "${deps}/${required}")
      message(FATAL_ERROR "ATTNSCOPE_DEPS_DIR: ${deps}/${required} is missing "
                          "(run tools/device/pack_deps.sh)")
    endif()
  endforeach()

  # Header-only libraries: INTERFACE targets that add an include directory. An imported
  # target's include directories are SYSTEM ones, so their warnings stay out of our builds.
  function(attnscope_header_only target include_dir)
    add_library(${target} INTERFACE IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${include_dir}")
  endfunction()
  attnscope_header_only(Eigen3::Eigen "${deps}/include/eigen3")
  attnscope_header_only(doctest::doctest "${deps}/include")
  attnscope_header_only(CLI11::CLI11 "${deps}/include")
  attnscope_header_only(nlohmann_json::nlohmann_json "${deps}/include")

  # PCRE2 and utf8proc: each shared library by full path. The linker records its soname and
  # CMake's build-tree RPATH points at deps/lib, so the test binaries find them at run time.
  function(attnscope_shared_library target soname)
    add_library(${target} SHARED IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES
      IMPORTED_LOCATION "${deps}/lib/${soname}"
      IMPORTED_SONAME "${soname}"
      INTERFACE_INCLUDE_DIRECTORIES "${deps}/include")
  endfunction()
  attnscope_shared_library(attnscope::pcre2 libpcre2-8.so.0)
  attnscope_shared_library(attnscope::utf8proc libutf8proc.so.2)
endif()
