#include "profiler/summary.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "runtime/error.h"

namespace attnscope::profiler {

double SummaryRow::gflops_per_s() const {
  return flops && total_ns ? static_cast<double>(flops) / static_cast<double>(total_ns) : 0.0;
}

double SummaryRow::gbytes_per_s() const {
  return bytes && total_ns ? static_cast<double>(bytes) / static_cast<double>(total_ns) : 0.0;
}

std::vector<std::string> sort_key_names() { return {"total", "self", "calls", "name"}; }

SortKey parse_sort_key(std::string_view text) {
  if (text == "total") return SortKey::Total;
  if (text == "self") return SortKey::Self;
  if (text == "calls") return SortKey::Calls;
  if (text == "name") return SortKey::Name;
  throw Error("--sort",
              "unknown column '" + std::string(text) + "' (valid: total, self, calls, name)");
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

namespace {

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

}  // namespace

std::string format_summary_table(const std::vector<SummaryRow>& rows, std::int64_t wall) {
  std::size_t name_width = 4;
  for (const SummaryRow& row : rows) name_width = std::max(name_width, row.name.size());
  std::ostringstream out;
  auto line = [&](const std::string& name, const std::vector<std::string>& cells) {
    out << std::left << std::setw(static_cast<int>(name_width)) << name;
    const int widths[] = {8, 12, 12, 11, 8, 12, 10, 10, 12};
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out << "  " << std::right << std::setw(widths[i]) << cells[i];
    }
    out << "\n";
  };
  line("name", {"calls", "total ms", "self ms", "avg ms", "self %", "GFLOP", "GFLOP/s", "GB/s",
                "peak mem"});
  out << std::string(name_width + 8 * 2 + 8 + 12 + 12 + 11 + 8 + 12 + 10 + 10 + 12, '-') << "\n";
  for (const SummaryRow& row : rows) {
    const double share =
        wall ? 100.0 * static_cast<double>(row.self_ns) / static_cast<double>(wall) : 0.0;
    line(row.name,
         {std::to_string(row.calls), milliseconds(static_cast<double>(row.total_ns)),
          milliseconds(static_cast<double>(row.self_ns)), milliseconds(row.average_ns()),
          fixed(share, 1), row.flops ? fixed(static_cast<double>(row.flops) / 1e9, 3) : "-",
          row.flops ? fixed(row.gflops_per_s(), 2) : "-",
          row.bytes ? fixed(row.gbytes_per_s(), 2) : "-",
          row.peak_bytes ? binary_bytes(row.peak_bytes) : "-"});
  }
  out << "wall time of the top-level scopes: " << milliseconds(static_cast<double>(wall))
      << " ms (self % is of this; peak mem: the largest rise of live bytes during one call, "
         "binary units)\n";
  return out.str();
}

}  // namespace attnscope::profiler
