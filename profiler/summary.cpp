#include "profiler/summary.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "runtime/error.h"

namespace attnscope::profiler {

namespace {

// The time a row's rates are taken over: device time when measured, else host time.
std::int64_t rate_time_ns(const SummaryRow& row) {
  return row.device_measured ? row.device_total_ns : row.total_ns;
}

std::string milliseconds(double ns) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(3) << ns / 1e6;
  return text.str();
}

std::string fixed(double value, int decimals) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << value;
  return text.str();
}

double share(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// Fixed-width columns: the first left-aligned to the widest cell, the others right-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::pair<std::string, int>> columns)
      : columns_(std::move(columns)) {}
  void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string str() const {
    std::size_t first = columns_[0].first.size();
    for (const auto& row : rows_) first = std::max(first, row[0].size());
    std::ostringstream out;
    auto line = [&](const std::vector<std::string>& cells) {
      out << std::left << std::setw(static_cast<int>(first)) << cells[0];
      for (std::size_t i = 1; i < cells.size(); ++i) {
        out << "  " << std::right << std::setw(columns_[i].second) << cells[i];
      }
      out << "\n";
    };
    std::vector<std::string> header;
    std::size_t width = first;
    for (const auto& [title, column_width] : columns_) header.push_back(title);
    for (std::size_t i = 1; i < columns_.size(); ++i) width += 2 + columns_[i].second;
    line(header);
    out << std::string(width, '-') << "\n";
    for (const auto& row : rows_) line(row);
    return out.str();
  }

 private:
  std::vector<std::pair<std::string, int>> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

double SummaryRow::gflops_per_s() const {
  const std::int64_t time = rate_time_ns(*this);
  return flops && time ? static_cast<double>(flops) / static_cast<double>(time) : 0.0;
}

double SummaryRow::gbytes_per_s() const {
  const std::int64_t time = rate_time_ns(*this);
  return bytes && time ? static_cast<double>(bytes) / static_cast<double>(time) : 0.0;
}

std::vector<std::string> sort_key_names() {
  return {"total", "self", "calls", "name", "device", "device-self"};
}

SortKey parse_sort_key(std::string_view text) {
  if (text == "total") return SortKey::Total;
  if (text == "self") return SortKey::Self;
  if (text == "calls") return SortKey::Calls;
  if (text == "name") return SortKey::Name;
  if (text == "device") return SortKey::Device;
  if (text == "device-self") return SortKey::DeviceSelf;
  throw Error("--sort", "unknown column '" + std::string(text) +
                            "' (valid: total, self, calls, name, device, device-self)");
}

std::vector<SummaryRow> summarize(const std::vector<Event>& events, SortKey sort) {
  std::map<std::string, SummaryRow> by_name;
  for (const Event& e : events) {
    SummaryRow& row = by_name[e.name];
    row.name = e.name;
    row.category = e.category;
    row.calls += 1;
    row.total_ns += e.duration_ns();
    row.self_ns += e.self_ns();
    row.flops += e.flops;
    row.bytes += e.bytes;
    row.peak_bytes = std::max(row.peak_bytes, e.peak_bytes);
    if (e.device_ns >= 0) {
      row.device_measured = true;
      row.device_total_ns += e.device_ns;
      row.device_self_ns += e.device_self_ns;
    }
    row.kernels += e.kernels;
  }
  std::vector<SummaryRow> rows;
  for (auto& [name, row] : by_name) rows.push_back(std::move(row));
  auto larger_first = [sort](const SummaryRow& a, const SummaryRow& b) {
    switch (sort) {
      case SortKey::Total:
        return a.total_ns > b.total_ns;
      case SortKey::Self:
        return a.self_ns > b.self_ns;
      case SortKey::Calls:
        return a.calls > b.calls;
      case SortKey::Name:
        return a.name < b.name;
      case SortKey::Device:
        return a.device_total_ns > b.device_total_ns;
      case SortKey::DeviceSelf:
        return a.device_self_ns > b.device_self_ns;
    }
    return false;
  };
  // Stable: ties keep the alphabetical order of the map.
  std::stable_sort(rows.begin(), rows.end(), larger_first);
  return rows;
}

std::int64_t wall_ns(const std::vector<Event>& events) {
  std::int64_t wall = 0;
  for (const Event& e : events) {
    if (e.depth == 0) wall += e.duration_ns();
  }
  return wall;
}

std::string binary_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  std::ostringstream text;
  if (unit == 0) {
    text << bytes << " B";
  } else {
    text << std::fixed << std::setprecision(2) << value << " " << units[unit];
  }
  return text.str();
}

std::string format_summary_table(const std::vector<SummaryRow>& rows, std::int64_t wall,
                                 std::int64_t device_wall) {
  const bool device = device_wall >= 0;
  std::vector<std::pair<std::string, int>> columns = {
      {"name", 0},   {"calls", 8},  {"total ms", 12}, {"self ms", 12}, {"avg ms", 11},
      {"self %", 8}, {"GFLOP", 12}, {"GFLOP/s", 10},  {"GB/s", 10},    {"peak mem", 12}};
  if (device) {
    columns.insert(columns.begin() + 6,
                   {{"dev total ms", 13}, {"dev self ms", 12}, {"dev self %", 10}, {"kernels", 8}});
  }
  TextTable table(columns);
  for (const SummaryRow& row : rows) {
    std::vector<std::string> cells = {row.name,
                                      std::to_string(row.calls),
                                      milliseconds(static_cast<double>(row.total_ns)),
                                      milliseconds(static_cast<double>(row.self_ns)),
                                      milliseconds(row.average_ns()),
                                      fixed(share(row.self_ns, wall), 1)};
    if (device) {
      const bool measured = row.device_measured;
      cells.push_back(measured ? milliseconds(static_cast<double>(row.device_total_ns)) : "-");
      cells.push_back(measured ? milliseconds(static_cast<double>(row.device_self_ns)) : "-");
      cells.push_back(measured ? fixed(share(row.device_self_ns, device_wall), 1) : "-");
      cells.push_back(std::to_string(row.kernels));
    }
    cells.push_back(row.flops ? fixed(static_cast<double>(row.flops) / 1e9, 3) : "-");
    cells.push_back(row.flops ? fixed(row.gflops_per_s(), 2) : "-");
    cells.push_back(row.bytes ? fixed(row.gbytes_per_s(), 2) : "-");
    cells.push_back(row.peak_bytes ? binary_bytes(row.peak_bytes) : "-");
    table.add(std::move(cells));
  }
  std::string out = table.str();
  out += "wall time of the top-level scopes: " + milliseconds(static_cast<double>(wall)) + " ms";
  if (device) {
    out += " host, " + milliseconds(static_cast<double>(device_wall)) +
           " ms device (self % is of each; GFLOP/s and GB/s over device time";
  } else {
    out += " (self % is of this";
  }
  out += "; peak mem: the largest rise of live bytes during one call, binary units)\n";
  return out;
}

std::vector<LayerTime> times_by_layer(const std::vector<Event>& events, std::size_t first,
                                      std::size_t end, std::string_view category) {
  std::unordered_map<std::int64_t, const Event*> by_id;
  for (std::size_t i = first; i < end; ++i) by_id[events[i].id] = &events[i];
  auto time_of = [](const Event& e) { return e.device_ns >= 0 ? e.device_ns : e.duration_ns(); };
  std::map<std::int64_t, LayerTime> rows;
  for (std::size_t i = first; i < end; ++i) {
    const Event& e = events[i];
    if (e.index >= 0) {
      LayerTime& row = rows[e.index];
      row.layer = e.index;
      row.layer_ns += time_of(e);
    }
    if (e.category != category) continue;
    for (auto up = by_id.find(e.parent); up != by_id.end(); up = by_id.find(up->second->parent)) {
      if (up->second->index < 0) continue;
      LayerTime& row = rows[up->second->index];
      row.layer = up->second->index;
      row.calls += 1;
      row.time_ns += time_of(e);
      break;
    }
  }
  std::vector<LayerTime> result;
  for (const auto& [layer, row] : rows) result.push_back(row);
  return result;
}

std::string format_layer_table(const std::vector<LayerTime>& rows) {
  TextTable table({{"layer", 0}, {"calls", 7}, {"ms", 11}, {"layer ms", 11}, {"share %", 8}});
  LayerTime total;
  for (const LayerTime& row : rows) {
    table.add({std::to_string(row.layer), std::to_string(row.calls),
               milliseconds(static_cast<double>(row.time_ns)),
               milliseconds(static_cast<double>(row.layer_ns)), fixed(100.0 * row.share(), 1)});
    total.calls += row.calls;
    total.time_ns += row.time_ns;
    total.layer_ns += row.layer_ns;
  }
  table.add({"all", std::to_string(total.calls), milliseconds(static_cast<double>(total.time_ns)),
             milliseconds(static_cast<double>(total.layer_ns)), fixed(100.0 * total.share(), 1)});
  return table.str();
}

std::vector<KernelRow> summarize_kernels(const Trace& trace) {
  std::unordered_map<std::int64_t, const Event*> scopes;
  for (const Event& e : trace.events) scopes[e.id] = &e;
  using Key = std::tuple<std::string, std::string, int, int, int, int, int, int, int, int>;
  std::map<Key, KernelRow> groups;
  for (const DeviceEvent& work : trace.device) {
    if (!work.is_work()) continue;
    const auto scope = scopes.find(static_cast<std::int64_t>(work.external_id));
    const std::string scope_name =
        work.external_id != 0 && scope != scopes.end() ? scope->second->name : "";
    const int shared = work.static_shared_bytes + work.dynamic_shared_bytes;
    const Key key{work.name,    scope_name,   work.grid_x,
                  work.grid_y,  work.grid_z,  work.block_x,
                  work.block_y, work.block_z, work.registers_per_thread,
                  shared};
    KernelRow& row = groups[key];
    const std::int64_t duration = work.duration_ns();
    if (row.calls == 0) {
      row.name = work.name;
      row.scope = scope_name;
      row.grid_x = work.grid_x, row.grid_y = work.grid_y, row.grid_z = work.grid_z;
      row.block_x = work.block_x, row.block_y = work.block_y, row.block_z = work.block_z;
      row.registers_per_thread = work.registers_per_thread;
      row.shared_bytes = shared;
      row.occupancy = work.occupancy;
      row.occupancy_limit = work.occupancy_limit;
      row.min_ns = duration;
      row.max_ns = duration;
    }
    row.calls += 1;
    row.total_ns += duration;
    row.min_ns = std::min(row.min_ns, duration);
    row.max_ns = std::max(row.max_ns, duration);
  }
  std::vector<KernelRow> rows;
  for (auto& [key, row] : groups) rows.push_back(std::move(row));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const KernelRow& a, const KernelRow& b) { return a.total_ns > b.total_ns; });
  return rows;
}

std::string format_kernel_table(const std::vector<KernelRow>& rows, std::size_t max_rows) {
  constexpr std::size_t kNameWidth = 60;  // template-heavy names (cuBLAS) are cut here
  TextTable table({{"kernel", 0},
                   {"scope", 24},
                   {"calls", 7},
                   {"total ms", 11},
                   {"avg us", 10},
                   {"grid", 16},
                   {"block", 12},
                   {"regs", 5},
                   {"smem", 10},
                   {"occupancy", 9},
                   {"limited by", 13}});
  for (std::size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const KernelRow& row = rows[i];
    std::string name = row.name;
    if (name.size() > kNameWidth) name = name.substr(0, kNameWidth - 3) + "...";
    const bool kernel = row.block_x > 0;
    auto dims = [](int x, int y, int z) {
      return std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
    };
    table.add({name, row.scope.empty() ? "-" : row.scope, std::to_string(row.calls),
               milliseconds(static_cast<double>(row.total_ns)), fixed(row.average_ns() / 1e3, 2),
               kernel ? dims(row.grid_x, row.grid_y, row.grid_z) : "-",
               kernel ? dims(row.block_x, row.block_y, row.block_z) : "-",
               kernel ? std::to_string(row.registers_per_thread) : "-",
               kernel ? binary_bytes(static_cast<std::size_t>(row.shared_bytes)) : "-",
               row.occupancy >= 0 ? fixed(100.0 * row.occupancy, 1) + "%" : "-",
               row.occupancy >= 0 ? row.occupancy_limit : "-"});
  }
  std::string out = table.str();
  if (rows.size() > max_rows) {
    out += std::to_string(rows.size() - max_rows) + " more launch configurations not shown\n";
  }
  out +=
      "occupancy: theoretical, from the launch shape and the SM's limits (an upper bound of "
      "what the SM holds at once)\n";
  return out;
}

std::vector<FidelityRow> fidelity_rows(const std::vector<Event>& events) {
  std::map<std::string, FidelityRow> by_name;
  for (const Event& e : events) {
    if (e.kernels == 0 || e.event_timer_ns < 0 || e.device_ns != e.device_self_ns) continue;
    FidelityRow& row = by_name[e.name];
    row.name = e.name;
    row.calls += 1;
    row.kernels += e.kernels;
    row.cupti_ns += e.device_ns;
    row.event_ns += e.event_timer_ns;
  }
  std::vector<FidelityRow> rows;
  for (auto& [name, row] : by_name) rows.push_back(std::move(row));
  std::stable_sort(rows.begin(), rows.end(), [](const FidelityRow& a, const FidelityRow& b) {
    return a.cupti_ns > b.cupti_ns;
  });
  return rows;
}

std::string format_fidelity_table(const std::vector<FidelityRow>& rows) {
  TextTable table({{"scope", 0},
                   {"calls", 7},
                   {"kernels", 8},
                   {"CUPTI ms", 11},
                   {"events ms", 11},
                   {"events / CUPTI", 15}});
  for (const FidelityRow& row : rows) {
    table.add({row.name, std::to_string(row.calls), std::to_string(row.kernels),
               milliseconds(static_cast<double>(row.cupti_ns)),
               milliseconds(static_cast<double>(row.event_ns)), fixed(row.ratio(), 3)});
  }
  return table.str() +
         "CUPTI: the kernels' own GPU timestamps; events: cudaEventRecord on the stream around the "
         "scope, so launch gaps count too (ratio > 1 where the GPU waited for the host)\n";
}

}  // namespace attnscope::profiler
