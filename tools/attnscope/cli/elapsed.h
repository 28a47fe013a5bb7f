// seconds_since: how every subcommand reads its steady clock.
#pragma once

#include <chrono>

namespace attnscope::cli {

// Seconds from `start` (a std::chrono::steady_clock::now()) until now.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace attnscope::cli
