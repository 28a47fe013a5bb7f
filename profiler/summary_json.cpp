#include "profiler/summary_json.h"

namespace attnscope::profiler {

nlohmann::json summary_json(const std::vector<SummaryRow>& rows, std::int64_t wall,
                            std::size_t peak_memory_bytes) {
  nlohmann::json out_rows = nlohmann::json::array();
  for (const SummaryRow& row : rows) {
    out_rows.push_back({
        {"name", row.name},
        {"category", row.category},
        {"calls", row.calls},
        {"total_ns", row.total_ns},
        {"self_ns", row.self_ns},
        {"average_ns", row.average_ns()},
        {"self_percent",
         wall ? 100.0 * static_cast<double>(row.self_ns) / static_cast<double>(wall) : 0.0},
        {"flops", row.flops},
        {"bytes", row.bytes},
        {"gflops_per_s", row.gflops_per_s()},
        {"gbytes_per_s", row.gbytes_per_s()},
        {"peak_bytes", row.peak_bytes},
    });
  }
  return {{"format", "attnscope-profile-summary"},
          {"version", 1},
          {"wall_ns", wall},
          {"peak_memory_bytes", peak_memory_bytes},
          {"rows", out_rows}};
}

}  // namespace attnscope::profiler
