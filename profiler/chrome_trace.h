// The Chrome Trace Event Format (JSON object form), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open:
//
//   {"displayTimeUnit": "ms", "traceEvents": [
//     {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "..."}},
//     {"ph": "M", "name": "thread_name", "pid": 1, "tid": T, "args": {"name": "host thread T"}},
//     {"ph": "X", "name", "cat", "pid": 1, "tid": T, "ts": us, "dur": us,
//      "args": {"depth", "flops"?, "bytes"?, "peak_bytes"?, "device_us"?, ...}},  one per scope
//     (a scope with an index is named "layer 3", and it and every scope inside it carry
//     "layer": 3 in their args, so a viewer can group attention time by layer)
//     {"ph": "C", "name": "memory", "pid": 1, "ts": us, "args": {"cpu_bytes": N}}, ...],
//    "otherData": {...}}                                                       GPU runs only
//
// Engine runs add a process "requests" (pid 3) with one track per request ("request N") and a
// slice per phase of it (Trace::spans: queued, prefill, decode, preempted, recompute).
//
// "X" events are complete events (start and duration, in microseconds with nanosecond
// fractions); the viewer nests them by time per thread. "C" events draw the memory counter.
// Events are written sorted by start time (parents before their children).
//
// GPU runs add, from Trace::device:
//   - a process "GPU 0" (pid 2) with one track per stream ("stream N", tid = CUPTI's stream id)
//     holding the kernels, copies and memsets as "X" events (args: the enclosing scope, grid,
//     block, registers, shared memory, occupancy, bytes), a "synchronization" track, and the
//     device allocator's memory counter ("cuda_bytes");
//   - one "CUDA API" track per host thread in pid 1 (tid 1000 + k) with the runtime and driver
//     calls, apart from the scopes' tracks so clock rounding can never break their nesting;
//   - a flow arrow from each launching API call (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync)
//     to the work it launched: {"ph": "s", "id": correlation id, ...} at the call and
//     {"ph": "f", "bp": "e", "id": correlation id, ...} at the kernel;
//   - "otherData": {"device", "device_timing", "dropped_records", "notes"}.
// Cost: O(n log n) in the number of events.
#pragma once

#include <ostream>
#include <string>

#include "profiler/event.h"

namespace attnscope::profiler {

void write_chrome_trace(const Trace& trace, const std::string& process_name, std::ostream& out);

}  // namespace attnscope::profiler
