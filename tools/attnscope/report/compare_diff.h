// `attnscope compare --diff A.json B.json`: two summaries saved by `attnscope profile --json`,
// side by side per event name (total time and calls in each, the change in ms and %), sorted by
// the absolute change of total time, largest first. The time is the device time when both
// summaries come from a GPU, the host time otherwise. A name missing from one side counts as 0
// there. Output: a Markdown table. Cost: O(n log n) in the number of names.
#pragma once

#include <string>

namespace attnscope::cli {

// Throws Error when a file cannot be read or is not a profile summary.
std::string diff_profiles(const std::string& path_a, const std::string& path_b);

}  // namespace attnscope::cli
