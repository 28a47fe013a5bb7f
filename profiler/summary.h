// The summary table: events grouped by name, in the spirit of torch.profiler's
// key_averages().table().
//
// Per name: calls; total time (sum of the events' durations); self time (total minus the time
// of their direct children, so the self times of all rows add up to the wall time of the
// top-level scopes); average (total / calls); self % of that wall time; FLOPs and bytes (sums
// of what the events carry, known for every event of a name or for none) and the rates they
// give over the total time; the highest peak of memory growth of one call (Event::peak_bytes).
// Cost: one pass over the events plus a sort of the rows.
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

  double average_ns() const {
    return calls ? static_cast<double>(total_ns) / static_cast<double>(calls) : 0.0;
  }
  // 0 when unknown.
  double gflops_per_s() const;
  double gbytes_per_s() const;
};

enum class SortKey { Total, Self, Calls, Name };

// "total", "self", "calls" or "name"; throws Error otherwise.
SortKey parse_sort_key(std::string_view text);
// The valid names of parse_sort_key, for help texts and flag checks.
std::vector<std::string> sort_key_names();

// One row per event name, in the order `sort` asks (largest first; names alphabetically).
std::vector<SummaryRow> summarize(const std::vector<Event>& events, SortKey sort);
// The wall time the events cover: the sum of the durations of the top-level (depth 0) events.
std::int64_t wall_ns(const std::vector<Event>& events);

// A fixed-width text table, one line per row, with a header and a totals line.
std::string format_summary_table(const std::vector<SummaryRow>& rows, std::int64_t wall);

// Bytes in binary units: "512 B", "3.00 KiB", "1.50 MiB", "2.00 GiB".
std::string binary_bytes(std::size_t bytes);

}  // namespace attnscope::profiler
