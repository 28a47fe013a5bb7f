#include "profiler/summary_json.h"

namespace attnscope::profiler {

namespace {

double percent(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

nlohmann::json summary_json(const std::vector<SummaryRow>& rows, std::int64_t wall,
                            std::size_t peak_memory_bytes, std::int64_t device_wall,
                            const std::vector<KernelRow>& kernels) {
  nlohmann::json out_rows = nlohmann::json::array();
  for (const SummaryRow& row : rows) {
    nlohmann::json out = {
        {"name", row.name},
        {"category", row.category},
        {"calls", row.calls},
        {"total_ns", row.total_ns},
        {"self_ns", row.self_ns},
        {"average_ns", row.average_ns()},
        {"self_percent", percent(row.self_ns, wall)},
        {"flops", row.flops},
        {"bytes", row.bytes},
        {"gflops_per_s", row.gflops_per_s()},
        {"gbytes_per_s", row.gbytes_per_s()},
        {"peak_bytes", row.peak_bytes},
        {"device_total_ns", nullptr},
        {"device_self_ns", nullptr},
        {"device_self_percent", nullptr},
        {"kernels", row.kernels},
    };
    if (row.device_measured) {
      out["device_total_ns"] = row.device_total_ns;
      out["device_self_ns"] = row.device_self_ns;
      out["device_self_percent"] = percent(row.device_self_ns, device_wall);
    }
    out_rows.push_back(out);
  }
  nlohmann::json out_kernels = nlohmann::json::array();
  for (const KernelRow& k : kernels) {
    out_kernels.push_back({
        {"name", k.name},
        {"scope", k.scope},
        {"calls", k.calls},
        {"total_ns", k.total_ns},
        {"average_ns", k.average_ns()},
        {"min_ns", k.min_ns},
        {"max_ns", k.max_ns},
        {"grid", {k.grid_x, k.grid_y, k.grid_z}},
        {"block", {k.block_x, k.block_y, k.block_z}},
        {"registers_per_thread", k.registers_per_thread},
        {"shared_bytes", k.shared_bytes},
        {"occupancy", k.occupancy >= 0 ? nlohmann::json(k.occupancy) : nlohmann::json(nullptr)},
        {"occupancy_limit", k.occupancy_limit},
    });
  }
  return {{"format", "attnscope-profile-summary"},
          {"version", 1},
          {"wall_ns", wall},
          {"device_wall_ns", device_wall >= 0 ? nlohmann::json(device_wall) : nlohmann::json()},
          {"peak_memory_bytes", peak_memory_bytes},
          {"rows", out_rows},
          {"kernels", out_kernels}};
}

nlohmann::json layer_times_json(const std::vector<LayerTime>& rows) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerTime& layer : rows) {
    layers.push_back({{"layer", layer.layer},
                      {"calls", layer.calls},
                      {"attention_ms", static_cast<double>(layer.time_ns) / 1e6},
                      {"layer_ms", static_cast<double>(layer.layer_ns) / 1e6}});
  }
  return layers;
}

}  // namespace attnscope::profiler
