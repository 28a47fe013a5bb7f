// The summary table as JSON, for scripts and for `attnscope compare --diff`:
//
//   {"format": "attnscope-profile-summary", "version": 1, "wall_ns": N, "device_wall_ns": N|null,
//    "peak_memory_bytes": N, "rows": [{"name", "category", "calls", "total_ns", "self_ns",
//    "average_ns", "self_percent", "flops", "bytes", "gflops_per_s", "gbytes_per_s",
//    "peak_bytes", "device_total_ns", "device_self_ns", "device_self_percent", "kernels"}, ...],
//    "kernels": [{"name", "scope", "calls", "total_ns", "average_ns", "min_ns", "max_ns", "grid",
//    "block", "registers_per_thread", "shared_bytes", "occupancy", "occupancy_limit"}, ...]}
//
// Times in nanoseconds, bytes in bytes; flops/bytes and their rates are 0 when unknown. The
// device fields are null (and "kernels" empty) on the CPU, where nothing measures them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "profiler/summary.h"

namespace attnscope::profiler {

// `peak_memory_bytes`: the highest live bytes of the run's allocator. `device_wall`:
// device_wall_ns() (-1 on the CPU).
// The per-layer rows (times_by_layer) as [{"layer", "calls", "attention_ms", "layer_ms"}]: what
// `profile --json`, `explain --json` and the Python module's profile() write.
nlohmann::json layer_times_json(const std::vector<LayerTime>& rows);

nlohmann::json summary_json(const std::vector<SummaryRow>& rows, std::int64_t wall,
                            std::size_t peak_memory_bytes, std::int64_t device_wall = -1,
                            const std::vector<KernelRow>& kernels = {});

}  // namespace attnscope::profiler
