// The kernel levels (runtime/cpu_features.h) a test can run on this CPU, for the ops whose
// kernels differ by level: the list, and a test body run once per level with cpu_level() capped
// at it.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "runtime/cpu_features.h"

namespace attnscope::testing {

// The levels this CPU runs, from portable up to the best (leaves cpu_level() uncapped).
inline std::vector<CpuLevel> levels_of_this_cpu() {
  set_cpu_level_cap(std::nullopt);
  std::vector<CpuLevel> levels;
  for (CpuLevel level : kCpuLevels) {
    if (level <= cpu_level()) levels.push_back(level);
  }
  return levels;
}

// Runs `body` once per level of levels_of_this_cpu(), with cpu_level() capped at it.
template <typename Body>
void for_each_cpu_level(Body body) {
  const std::vector<CpuLevel> levels = levels_of_this_cpu();
  for (CpuLevel level : kCpuLevels) {
    if (std::find(levels.begin(), levels.end(), level) == levels.end()) {
      MESSAGE("this CPU has no " << cpu_level_name(level) << " kernels: level not tested");
      continue;
    }
    set_cpu_level_cap(level);
    CAPTURE(cpu_level_name(level));
    body();
  }
  set_cpu_level_cap(std::nullopt);
}

// Caps cpu_level() at `level` for the guard's lifetime (then removes the cap).
class CpuLevelCap {
 public:
  explicit CpuLevelCap(CpuLevel level) { set_cpu_level_cap(level); }
  ~CpuLevelCap() { set_cpu_level_cap(std::nullopt); }
  CpuLevelCap(const CpuLevelCap&) = delete;
  CpuLevelCap& operator=(const CpuLevelCap&) = delete;
};

}  // namespace attnscope::testing
