// The Chrome Trace Event Format (JSON object form), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open:
//
//   {"displayTimeUnit": "ms", "traceEvents": [
//     {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "..."}},
//     {"ph": "M", "name": "thread_name", "pid": 1, "tid": T, "args": {"name": "host thread T"}},
//     {"ph": "X", "name", "cat", "pid": 1, "tid": T, "ts": us, "dur": us,
//      "args": {"depth", "flops"?, "bytes"?, "peak_bytes"?}},           one per scope
//     {"ph": "C", "name": "memory", "pid": 1, "ts": us, "args": {"cpu_bytes": N}}, ...]}
//
// "X" events are complete events (start and duration, in microseconds with nanosecond
// fractions); the viewer nests them by time per thread. "C" events draw the memory counter.
// Events are written sorted by start time (parents before their children). Cost: O(n log n).
#pragma once

#include <ostream>
#include <string>

#include "profiler/event.h"

namespace attnscope::profiler {

void write_chrome_trace(const Trace& trace, const std::string& process_name, std::ostream& out);

}  // namespace attnscope::profiler
