# Where attnscope's dependencies come from: the one place that says so.
#
#   ATTNSCOPE_DEPS_DIR empty (default): the system, i.e. the Debian packages that tools/setup.sh
#     installs, found through their CMake package files and pkg-config.
#   ATTNSCOPE_DEPS_DIR=/path/.deps: a self-contained folder made by tools/device/pack_deps.sh,
#     for machines with no package manager (the lent GPU machine). Layout:
#       include/eigen3/Eigen/  include/doctest/  include/CLI/  include/nlohmann/  include/pcre2.h
#       lib/libpcre2-8.so.0    (a real file, not a link)
#
# Either way the code links the same target names: Eigen3::Eigen, doctest::doctest,
# CLI11::CLI11, nlohmann_json::nlohmann_json, attnscope::pcre2 (PCRE2's 8-bit library) and
# OpenMP::OpenMP_CXX (always the compiler's own, from the system). From the system only:
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
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
  add_library(attnscope::httplib ALIAS PkgConfig::HTTPLIB)
else()
  set(deps "${ATTNSCOPE_DEPS_DIR}")
  message(STATUS "attnscope: dependencies from ${deps}")
  foreach(required include/eigen3/Eigen/Core include/doctest/doctest.h include/CLI/CLI.hpp
                   include/nlohmann/json.hpp include/pcre2.h lib/libpcre2-8.so.0)
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

  # PCRE2: the shared library by full path. The linker records its soname (libpcre2-8.so.0) and
  # CMake's build-tree RPATH points at deps/lib, so the test binaries find it at run time.
  add_library(attnscope::pcre2 SHARED IMPORTED GLOBAL)
  set_target_properties(attnscope::pcre2 PROPERTIES
    IMPORTED_LOCATION "${deps}/lib/libpcre2-8.so.0"
    IMPORTED_SONAME "libpcre2-8.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${deps}/include")
endif()
