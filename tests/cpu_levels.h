// for_each_cpu_level: a test body run once per kernel level this CPU has
// (runtime/cpu_features.h), with cpu_level() capped at it, for the ops whose kernels differ by
// level.
#pragma once

#include <doctest/doctest.h>

#include "runtime/cpu_features.h"

namespace attnscope::testing {

// Runs `body` once per kernel level this CPU has, with cpu_level() capped at it.
template <typename Body>
void for_each_cpu_level(Body body) {
  for (CpuLevel level : kCpuLevels) {
    set_cpu_level_cap(level);
    if (cpu_level() != level) {
      MESSAGE("this CPU has no " << cpu_level_name(level) << " kernels: level not tested");
      continue;
    }
    CAPTURE(cpu_level_name(level));
    body();
  }
  set_cpu_level_cap(std::nullopt);
}

}  // namespace attnscope::testing
