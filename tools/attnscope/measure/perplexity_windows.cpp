// The perplexity windows (tools/attnscope/measure/perplexity_windows.h).
#include "tools/attnscope/measure/perplexity_windows.h"

#include <algorithm>

namespace attnscope::cli {

std::vector<Window> plan_windows(std::int64_t tokens, std::int64_t ctx, std::int64_t stride) {
  std::vector<Window> windows;
  std::int64_t previous_end = 0;
  for (std::int64_t begin = 0; begin < tokens; begin += stride) {
    Window window;
    window.begin = begin;
    window.end = std::min(begin + ctx, tokens);
    window.first_scored = std::max(previous_end, begin + 1);
    windows.push_back(window);
    previous_end = window.end;
    if (window.end == tokens) break;
  }
  return windows;
}

}  // namespace attnscope::cli
