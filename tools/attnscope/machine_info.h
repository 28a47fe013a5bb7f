// What reports say about the machine they were measured on.
#pragma once

#include <string>

namespace attnscope::cli {

// The CPU's model name from /proc/cpuinfo ("unknown CPU" when it cannot be read).
std::string cpu_model();

}  // namespace attnscope::cli
