// The summary table as JSON, for scripts and for `attnscope compare --diff`:
//
//   {"format": "attnscope-profile-summary", "version": 1, "wall_ns": N,
//    "peak_memory_bytes": N, "rows": [{"name", "category", "calls", "total_ns", "self_ns",
//    "average_ns", "self_percent", "flops", "bytes", "gflops_per_s", "gbytes_per_s",
//    "peak_bytes"}, ...]}
//
// Times in nanoseconds, bytes in bytes; flops/bytes and their rates are 0 when unknown.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "profiler/summary.h"

namespace attnscope::profiler {

// `peak_memory_bytes`: the highest live bytes of the run's allocator.
nlohmann::json summary_json(const std::vector<SummaryRow>& rows, std::int64_t wall,
                            std::size_t peak_memory_bytes);

}  // namespace attnscope::profiler
