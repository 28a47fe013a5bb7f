// The summary table: events grouped by name, in the spirit of torch.profiler's
// key_averages().table().
//
// Per name: calls; total time (sum of the events' durations); self time (total minus the time
// of their direct children, so the self times of all rows add up to the wall time of the
// top-level scopes); average (total / calls); self % of that wall time; FLOPs and bytes (sums
// of what the events carry, known for every event of a name or for none) and the rates they
// give over the total time; the highest peak of memory growth of one call (Event::peak_bytes).
//
// GPU runs add the device time per name (device_time.h): total and self, the self share of the
// device wall time, and the kernels launched directly inside. On a GPU the host times measure
// how long the host took to queue the work; the device times say how long the GPU ran it, so
// FLOP/s and GB/s are taken over the device time there. Two more tables: one row per kernel
// (name, enclosing scope, launch shape, occupancy), and the fidelity check (CUPTI's kernel
// durations against CUDA-event timings of the same scopes). Cost: one pass over the events plus
// a sort of the rows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/event.h"

namespace attnscope::profiler {

struct SummaryRow {
  std::string name;
  std::string category;
  std::int64_t calls = 0;
  std::int64_t total_ns = 0;
  std::int64_t self_ns = 0;
  std::uint64_t flops = 0;
  std::uint64_t bytes = 0;
  std::size_t peak_bytes = 0;  // the largest Event::peak_bytes of one call
  // GPU runs: sums over the calls that have a device time.
  bool device_measured = false;
  std::int64_t device_total_ns = 0;
  std::int64_t device_self_ns = 0;
  std::int64_t kernels = 0;

  double average_ns() const {
    return calls ? static_cast<double>(total_ns) / static_cast<double>(calls) : 0.0;
  }
  // Over the device time when measured, else the host time; 0 when unknown.
  double gflops_per_s() const;
  double gbytes_per_s() const;
};

enum class SortKey { Total, Self, Calls, Name, Device, DeviceSelf };

// "total", "self", "calls", "name", "device" or "device-self"; throws Error otherwise.
SortKey parse_sort_key(std::string_view text);
// The valid names of parse_sort_key, for help texts and flag checks.
std::vector<std::string> sort_key_names();

// One row per event name, in the order `sort` asks (largest first; names alphabetically).
std::vector<SummaryRow> summarize(const std::vector<Event>& events, SortKey sort);
// The wall time the events cover: the sum of the durations of the top-level (depth 0) events.
std::int64_t wall_ns(const std::vector<Event>& events);

// A fixed-width text table, one line per row, with a header and a totals line. `device_wall`
// (device_wall_ns(), -1 on the CPU) adds the device columns when >= 0.
std::string format_summary_table(const std::vector<SummaryRow>& rows, std::int64_t wall,
                                 std::int64_t device_wall = -1);

// One kernel (or copy, memset) launch configuration inside one scope name, over all its calls.
struct KernelRow {
  std::string name;   // demangled kernel name, "Memcpy HtoD", "Memset"
  std::string scope;  // name of the innermost scope open at the launch ("" when none)
  std::int64_t calls = 0;
  std::int64_t total_ns = 0;
  std::int64_t min_ns = 0, max_ns = 0;
  int grid_x = 0, grid_y = 0, grid_z = 0;
  int block_x = 0, block_y = 0, block_z = 0;
  int registers_per_thread = 0;
  int shared_bytes = 0;  // static + dynamic, per block
  double occupancy = -1;
  std::string occupancy_limit;

  double average_ns() const {
    return calls ? static_cast<double>(total_ns) / static_cast<double>(calls) : 0.0;
  }
};

// Work records grouped by (name, scope, launch shape), by total device time, largest first.
std::vector<KernelRow> summarize_kernels(const Trace& trace);
// The first `max_rows` rows as a text table, and a line saying how many were left out.
std::string format_kernel_table(const std::vector<KernelRow>& rows, std::size_t max_rows);

// Scopes timed both ways (GpuTiming::Both) whose device work all ran directly inside them,
// grouped by name: CUPTI's summed kernel durations against the CUDA events around the scope.
struct FidelityRow {
  std::string name;
  std::int64_t calls = 0;
  std::int64_t kernels = 0;
  std::int64_t cupti_ns = 0;  // sum of the kernel durations CUPTI measured
  std::int64_t event_ns = 0;  // sum of the times between the scopes' CUDA events
  double ratio() const {
    return cupti_ns ? static_cast<double>(event_ns) / static_cast<double>(cupti_ns) : 0.0;
  }
};
std::vector<FidelityRow> fidelity_rows(const std::vector<Event>& events);
std::string format_fidelity_table(const std::vector<FidelityRow>& rows);

// Time per layer: the events of one category (the attention calls) grouped by the layer they
// ran in. The model numbers its layer scopes (Scope::set_index: "layer" 0 .. L-1), so an
// event's layer is the index of its nearest ancestor that has one. Per layer: the calls, their
// summed time (device time where measured, else host time) and the layer scopes' own summed
// time, so a row says what share of its layer attention took. Every event of the category inside
// an indexed scope lands in exactly one row: the rows add up to the category's total there.
struct LayerTime {
  std::int64_t layer = 0;
  std::int64_t calls = 0;
  std::int64_t time_ns = 0;   // the category's events inside this layer
  std::int64_t layer_ns = 0;  // the layer scopes themselves
  double share() const {
    return layer_ns > 0 ? static_cast<double>(time_ns) / static_cast<double>(layer_ns) : 0.0;
  }
};
// Events [first, end) of `events`, in layer order; events outside any indexed scope are left
// out. Cost: one pass, a map by id, and a walk up each event's ancestors.
std::vector<LayerTime> times_by_layer(const std::vector<Event>& events, std::size_t first,
                                      std::size_t end, std::string_view category = "attention");
// A fixed-width table: layer, calls, ms, the layer's ms, share; a totals line.
std::string format_layer_table(const std::vector<LayerTime>& rows);

// Bytes in binary units: "512 B", "3.00 KiB", "1.50 MiB", "2.00 GiB".
std::string binary_bytes(std::size_t bytes);

}  // namespace attnscope::profiler
