// Prometheus text for /metrics (tools/attnscope/serve/metrics_text.h).
#include "tools/attnscope/serve/metrics_text.h"

#include <sstream>

namespace attnscope::cli {

namespace {

void sample(std::ostringstream& out, const char* name, const char* type, const char* help,
            double value) {
  out << "# HELP attnscope_" << name << " " << help << "\n# TYPE attnscope_" << name << " " << type
      << "\nattnscope_" << name << " " << value << "\n";
}

void histogram(std::ostringstream& out, const char* name, const char* help,
               const LoopMetrics::Histogram& h) {
  out << "# HELP attnscope_" << name << " " << help << "\n# TYPE attnscope_" << name
      << " histogram\n";
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i <= h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    out << "attnscope_" << name << "_bucket{le=\"";
    if (i < h.bounds.size()) {
      out << h.bounds[i];
    } else {
      out << "+Inf";
    }
    out << "\"} " << cumulative << "\n";
  }
  out << "attnscope_" << name << "_sum " << h.sum << "\nattnscope_" << name << "_count " << h.count
      << "\n";
}

}  // namespace

std::string prometheus_text(const LoopMetrics& m) {
  std::ostringstream out;
  const auto d = [](std::int64_t value) { return static_cast<double>(value); };
  sample(out, "num_requests_running", "gauge", "Requests holding KV blocks.", d(m.running));
  sample(out, "num_requests_waiting", "gauge", "Requests queued for KV blocks.", d(m.waiting));
  sample(out, "kv_blocks_used", "gauge", "KV cache blocks held by requests.", d(m.kv_blocks_used));
  sample(out, "kv_blocks_free", "gauge", "KV cache blocks free (some keep a cached prefix).",
         d(m.kv_blocks_free));
  sample(out, "kv_cache_usage_perc", "gauge", "Fraction of the KV cache's blocks in use.",
         m.kv_blocks > 0 ? d(m.kv_blocks_used) / d(m.kv_blocks) : 0.0);
  sample(out, "prefix_cache_hits_total", "counter", "Prompt blocks found in the prefix cache.",
         d(m.prefix_hits));
  sample(out, "prefix_cache_queries_total", "counter", "Prompt blocks looked up.",
         d(m.prefix_lookups));
  sample(out, "num_preemptions_total", "counter", "Requests preempted to free KV blocks.",
         d(m.preemptions));
  sample(out, "request_success_total", "counter", "Requests finished (any reason).",
         d(m.requests_finished));
  sample(out, "request_rejected_total", "counter", "Requests answered 429 (queue full).",
         d(m.requests_rejected));
  sample(out, "prompt_tokens_total", "counter", "Prompt tokens submitted.", d(m.prompt_tokens));
  sample(out, "generation_tokens_total", "counter", "Tokens generated.", d(m.generation_tokens));
  sample(out, "generation_tokens_per_second", "gauge",
         "Tokens generated per second of engine steps, since the start.",
         m.busy_seconds > 0 ? d(m.generation_tokens) / m.busy_seconds : 0.0);
  sample(out, "allocated_bytes", "gauge",
         "Bytes the engine's allocator holds between steps (weights, KV pool).",
         d(m.allocated_bytes));
  histogram(out, "time_to_first_token_seconds", "From arrival to the first token.",
            m.time_to_first_token);
  histogram(out, "inter_token_latency_seconds", "Between two tokens of a request.", m.inter_token);
  return out.str();
}

}  // namespace attnscope::cli
