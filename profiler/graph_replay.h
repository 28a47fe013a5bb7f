// Kernels replayed by a CUDA graph, given back to the scopes that captured them.
//
// CUPTI records a replayed graph's kernels with the correlation id of the one cudaGraphLaunch
// that ran them, so the external correlation id they carry is the scope open at the launch (the
// step), not the op or layer that queued each one: a graph would hide the per-op and per-layer
// times. But attnscope captures a step's graph right before launching it (runtime/cuda/
// step_graph.h), with the profiler's scopes open as in an eager step: every kernel, copy and
// memset the step queues is an API call recorded during the capture, carrying its scope, that
// launched nothing then. A graph captured from one stream is a chain, so its nodes run in the
// order they were captured. Hence the rule, applied per graph launch G on host thread T:
//
//   captured  = the work-launching API calls on T since the last stream-capture begin before G
//               that launched no work of their own (cudaLaunchKernel, cuLaunchKernel, the async
//               copies and memsets; a driver call nested inside a runtime call is the same
//               launch, counted once), in the order they were made;
//   replayed  = the work records carrying G's correlation id, in the order they ran;
//   if both have the same length, replayed[i] takes captured[i]'s scope (external id).
//
// When the lengths differ (a capture that forked onto other streams, or lost records), the
// replayed work keeps the launch's scope and is counted as unattributed, so a report can say
// so; so is work that says a graph ran it (DeviceEvent::graph_id) but that no graph launch's
// correlation id finds. Cost: one pass to index the records, then one window per graph launch.
#pragma once

#include <cstddef>
#include <vector>

#include "profiler/event.h"

namespace attnscope::profiler {

struct GraphReplays {
  std::size_t launches = 0;      // graph launches whose work was seen
  std::size_t attributed = 0;    // replayed work records given their capture-time scope
  std::size_t unattributed = 0;  // replayed work records left with the launch's or another scope
};

// Rewrites the external ids of replayed work in `events` (CUPTI's records of one collection, on
// one clock, API records included) as above.
GraphReplays attribute_graph_replays(std::vector<DeviceEvent>& events);

}  // namespace attnscope::profiler
