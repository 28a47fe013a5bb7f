// While a reply streams, text that may be the beginning of a marker (a stop string, <tool_call>,
// </think>) cannot be sent yet: the next token says whether it is one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace attnscope::cli {

// How many bytes at the end of `text` could begin `marker`: the longest suffix of `text` that is
// a proper prefix of it (0 when none).
inline std::size_t partial_match_at_end(std::string_view text, std::string_view marker) {
  for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (marker.starts_with(text.substr(text.size() - n))) return n;
  }
  return 0;
}

}  // namespace attnscope::cli
