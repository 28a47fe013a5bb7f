// The attention microbenchmark, shared by `attnscope bench-attention` and `attnscope bench --op
// attention`: its flags, the measurement of each backend on random inputs of one shape, and the
// small statistics and formatting helpers both commands print with.
//
// Cost: the inputs (q, k, v, out) plus each backend's temporaries; the study's default shape
// (B=8, H=16, T=1024, D=64) needs about 3 GiB with the naive backend.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/attention/backend.h"
#include "runtime/context.h"

namespace attnscope::cli {

struct AttentionBenchFlags {
  std::vector<std::string> backends = {"all"};
  std::int64_t batch = 8;
  std::int64_t heads = 16;
  std::int64_t kv_heads = 0;  // 0 until parsed: then --kv-heads, or --heads when not given
  std::int64_t seq_len = 1024;
  std::int64_t head_dim = 64;
  bool decode = false;
  std::string dtype = "f32";
  std::string device = "cpu";
  int warmup = 1;
  int reps = 5;
  int threads = 0;
  std::uint64_t seed = 0;
};

// "batch 8, heads 16 (kv 16), q_len 1024, ..." for table captions: the shape of a prefill
// (q_len = kv_len) or a decode (q_len = 1) call.
std::string describe_shape(const ops::attention::Shape& shape);

struct TimingStats {
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;
  double median_low = 0, median_high = 0;  // the median's 95% bootstrap interval
};

// Median with its 95% percentile-bootstrap interval (statistics.h), extremes, mean and sample
// standard deviation (n - 1; zero for a single value).
TimingStats summarize(std::vector<double> values);

struct BackendResult {
  std::string backend;
  std::optional<std::string> unsupported_reason;  // set when the backend threw Error
  std::vector<double> times_ms;
  TimingStats stats;  // of times_ms
  std::size_t peak_temporary_bytes = 0;
  ops::attention::CostModel predicted;
  int steps_observed = 0;
};

struct AttentionReport {
  ops::attention::Shape shape;
  int threads = 0;
  std::string device;  // Context::describe(): "cpu (2 threads)", "cuda: NVIDIA H200, ..."
  std::vector<BackendResult> results;  // one per chosen backend, in the order asked
};

// The --attn validator: "all" or a registered backend name (a usage error lists them).
CLI::Validator backend_name_validator();
// --heads, --kv-heads, --seq-len, --head-dim, --decode and --seed. `kv_heads_option` receives
// the --kv-heads option so that the caller can default it to --heads once parsed.
void add_attention_shape_flags(CLI::App& app, AttentionBenchFlags& flags,
                               CLI::Option*& kv_heads_option);
// Fills kv_heads from heads when --kv-heads was not given; throws CLI::ValidationError (a usage
// error) when the heads do not split.
void finish_attention_shape(AttentionBenchFlags& flags, const CLI::Option& kv_heads_option);

// Runs every chosen backend: warmup, timed reps, then one instrumented call for temporaries and
// steps. `label` prefixes the progress lines on stderr. Throws Error when the device cannot be
// used.
AttentionReport measure_attention(const AttentionBenchFlags& flags, const std::string& label);

std::string with_decimals(double value, int decimals);
std::string mebibytes(std::size_t bytes);

}  // namespace attnscope::cli
