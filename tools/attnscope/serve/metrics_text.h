// /metrics of `attnscope serve`: the engine loop's numbers in Prometheus' text exposition
// format (version 0.0.4): a HELP and a TYPE line per metric, gauges and counters as one sample,
// histograms as cumulative _bucket{le="..."} samples (the last le="+Inf") with _sum and _count.
// Names follow vLLM's where one exists, with the attnscope_ prefix.
#pragma once

#include <string>

#include "tools/attnscope/serve/engine_loop.h"

namespace attnscope::cli {

std::string prometheus_text(const LoopMetrics& metrics);

}  // namespace attnscope::cli
