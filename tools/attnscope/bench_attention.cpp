// `attnscope bench-attention`: times the attention op alone, backend by backend, on random
// inputs of one shape, and sets each measurement beside what the backend's cost model predicts.
//
// Per backend: --warmup untimed calls, --reps timed calls (a steady clock around forward()),
// then one instrumented call that measures the peak of temporary bytes taken from the allocator
// and counts the steps the profiler sees directly inside the backend's scope. A backend that
// cannot serve the case (it throws Error) gets a row with the reason; the others still run.
// Progress goes to stderr; a Markdown table (or one JSON object) goes to stdout.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "ops/attention/attention.h"
#include "profiler/cpu_tracer.h"
#include "runtime/error.h"
#include "tools/attnscope/commands.h"
#include "tools/attnscope/common.h"

namespace attnscope::cli {

namespace {

namespace attention = ops::attention;

struct BenchFlags {
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
  std::string output = "md";
};

// The shape of one attention call: prefill (q_len = kv_len) or decode (q_len = 1).
struct BenchCase {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  DType dtype = DType::F32;

  // FLOPs of the two GEMMs over the keys each query may see (the masked half is not counted):
  // 4 B Hq D per visible (query, key) pair, query i seeing kv_len - q_len + i + 1 keys.
  double useful_flops() const {
    const double visible_pairs = static_cast<double>(q_len) * static_cast<double>(kv_len - q_len) +
                                 static_cast<double>(q_len) * static_cast<double>(q_len + 1) / 2;
    return 4.0 * static_cast<double>(batch * heads * head_dim) * visible_pairs;
  }
};

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0, mean_ms = 0, stddev_ms = 0;
};

struct BackendResult {
  std::string backend;
  std::optional<std::string> unsupported_reason;  // set when the backend threw Error
  std::vector<double> times_ms;
  TimingStats stats;
  std::size_t peak_temporary_bytes = 0;
  attention::CostModel predicted;
  int steps_observed = 0;
};

// "all" expands to every registered backend in registry order; names and aliases resolve to the
// backend they name, each listed once.
std::vector<const attention::Backend*> resolve_backends(const std::vector<std::string>& requested) {
  std::vector<const attention::Backend*> backends;
  auto add = [&](const std::string& name) {
    const attention::Backend* backend = &attention::find_backend(name);
    if (std::find(backends.begin(), backends.end(), backend) == backends.end()) {
      backends.push_back(backend);
    }
  };
  for (const std::string& name : requested) {
    if (name == "all") {
      for (const std::string& registered : attention::backend_names()) add(registered);
    } else {
      add(name);
    }
  }
  return backends;
}

// The "model name" line of /proc/cpuinfo, or "unknown CPU" where there is none.
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!line.starts_with("model name")) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const std::size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "unknown CPU" : line.substr(start);
  }
  return "unknown CPU";
}

// Normal(0, 1) values of the given dtype (drawn in f32, then converted).
Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937_64& rng, Allocator& allocator) {
  Tensor values = Tensor::empty(shape, DType::F32, allocator);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  float* data = values.data<float>();
  for (std::int64_t i = 0; i < values.numel(); ++i) data[i] = normal(rng);
  return dtype == DType::F32 ? values : values.to_dtype(dtype, allocator);
}

TimingStats summarize(std::vector<double> times_ms) {
  std::sort(times_ms.begin(), times_ms.end());
  const std::size_t n = times_ms.size();
  TimingStats stats;
  stats.median_ms = n % 2 ? times_ms[n / 2] : (times_ms[n / 2 - 1] + times_ms[n / 2]) / 2;
  stats.min_ms = times_ms.front();
  stats.max_ms = times_ms.back();
  double sum = 0;
  for (double t : times_ms) sum += t;
  stats.mean_ms = sum / static_cast<double>(n);
  double squares = 0;
  for (double t : times_ms) squares += (t - stats.mean_ms) * (t - stats.mean_ms);
  // The sample standard deviation (n - 1); a single rep has none.
  stats.stddev_ms = n > 1 ? std::sqrt(squares / static_cast<double>(n - 1)) : 0.0;
  return stats;
}

// Sets a profiler on the context for its lifetime, and takes it off again even on an exception.
class ProfilerOn {
 public:
  ProfilerOn(Context& ctx, ScopeSink& sink) : ctx_(ctx) { ctx_.set_profiler(&sink); }
  ~ProfilerOn() { ctx_.set_profiler(nullptr); }
  ProfilerOn(const ProfilerOn&) = delete;
  ProfilerOn& operator=(const ProfilerOn&) = delete;

 private:
  Context& ctx_;
};

BackendResult bench_backend(Context& ctx, const attention::Backend& backend,
                            const attention::Call& call, const BenchFlags& flags) {
  BackendResult result;
  result.backend = std::string(backend.name());
  try {
    for (int i = 0; i < flags.warmup; ++i) backend.forward(ctx, call);
    for (int i = 0; i < flags.reps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      backend.forward(ctx, call);
      const std::chrono::duration<double, std::milli> took =
          std::chrono::steady_clock::now() - start;
      result.times_ms.push_back(took.count());
    }
    result.stats = summarize(result.times_ms);

    // The instrumented call: temporaries are whatever the allocator's peak rises above the
    // inputs and output already live; steps are the scopes directly inside the backend's own
    // (which is the tracer's only depth-0 event).
    Allocator& allocator = ctx.allocator();
    const std::size_t baseline = allocator.current_bytes();
    allocator.reset_peak();
    profiler::CpuTracer tracer;
    {
      const ProfilerOn profiling(ctx, tracer);
      backend.forward(ctx, call);
    }
    result.peak_temporary_bytes = allocator.peak_bytes() - baseline;
    result.steps_observed = static_cast<int>(
        std::count_if(tracer.events().begin(), tracer.events().end(),
                      [](const profiler::Event& event) { return event.depth == 1; }));
    result.predicted = backend.cost_model(ctx, call);
  } catch (const Error& e) {
    result.unsupported_reason = e.what();
  }
  return result;
}

std::string shape_description(const BenchCase& bench) {
  std::ostringstream text;
  text << "batch " << bench.batch << ", heads " << bench.heads << " (kv " << bench.kv_heads
       << "), q_len " << bench.q_len << ", kv_len " << bench.kv_len << ", head_dim "
       << bench.head_dim << ", causal " << (bench.q_len == 1 ? "decode" : "prefill");
  return text.str();
}

std::string with_decimals(double value, int decimals) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << value;
  return text.str();
}

std::string mebibytes(std::size_t bytes) {
  return with_decimals(static_cast<double>(bytes) / (1024.0 * 1024.0), 2);
}

// The median of naive, the baseline of the speedup column, when it ran.
std::optional<double> naive_median_ms(const std::vector<BackendResult>& results) {
  for (const BackendResult& r : results) {
    if (r.backend == "naive" && !r.unsupported_reason) return r.stats.median_ms;
  }
  return std::nullopt;
}

void print_markdown(const BenchCase& bench, const BenchFlags& flags, int threads,
                    const std::vector<BackendResult>& results) {
  std::cout << "Attention alone: " << shape_description(bench) << "; " << dtype_name(bench.dtype)
            << " on " << flags.device << ", threads " << threads << ", CPU " << cpu_model()
            << "; warmup " << flags.warmup << ", reps " << flags.reps << "\n\n";
  std::cout << "| backend | median ms | min..max ms | stddev ms | GFLOP/s | peak temporaries MiB "
               "| predicted MiB | steps observed/predicted | speedup vs naive |\n"
            << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const std::optional<double> naive_ms = naive_median_ms(results);
  for (const BackendResult& r : results) {
    if (r.unsupported_reason) {
      std::cout << "| " << r.backend << " | unsupported: " << *r.unsupported_reason
                << " | | | | | | | |\n";
      continue;
    }
    const TimingStats& s = r.stats;
    const double gflops = bench.useful_flops() / (s.median_ms * 1e-3) / 1e9;
    std::cout << "| " << r.backend << " | " << with_decimals(s.median_ms, 3) << " | "
              << with_decimals(s.min_ms, 3) << ".." << with_decimals(s.max_ms, 3) << " | "
              << with_decimals(s.stddev_ms, 3) << " | " << with_decimals(gflops, 2) << " | "
              << mebibytes(r.peak_temporary_bytes) << " | "
              << mebibytes(r.predicted.temporary_bytes) << " | " << r.steps_observed << "/"
              << r.predicted.steps << " | "
              << (naive_ms ? with_decimals(*naive_ms / s.median_ms, 2) + "x" : "-") << " |\n";
  }
}

void print_json(const BenchCase& bench, const BenchFlags& flags, int threads,
                const std::vector<BackendResult>& results) {
  const std::optional<double> naive_ms = naive_median_ms(results);
  nlohmann::json rows = nlohmann::json::array();
  for (const BackendResult& r : results) {
    if (r.unsupported_reason) {
      rows.push_back({{"backend", r.backend}, {"error", *r.unsupported_reason}});
      continue;
    }
    const TimingStats& s = r.stats;
    rows.push_back({
        {"backend", r.backend},
        {"times_ms", r.times_ms},
        {"median_ms", s.median_ms},
        {"min_ms", s.min_ms},
        {"max_ms", s.max_ms},
        {"mean_ms", s.mean_ms},
        {"stddev_ms", s.stddev_ms},
        {"gflops", bench.useful_flops() / (s.median_ms * 1e-3) / 1e9},
        {"peak_temporary_bytes", r.peak_temporary_bytes},
        {"predicted_temporary_bytes", r.predicted.temporary_bytes},
        {"steps_observed", r.steps_observed},
        {"steps_predicted", r.predicted.steps},
        {"speedup_vs_naive",
         naive_ms ? nlohmann::json(*naive_ms / s.median_ms) : nlohmann::json(nullptr)},
    });
  }
  const nlohmann::json out = {
      {"shape",
       {{"batch", bench.batch},
        {"heads", bench.heads},
        {"kv_heads", bench.kv_heads},
        {"q_len", bench.q_len},
        {"kv_len", bench.kv_len},
        {"head_dim", bench.head_dim},
        {"dtype", dtype_name(bench.dtype)},
        {"device", flags.device},
        {"causal", true}}},
      {"threads", threads},
      {"cpu", cpu_model()},
      {"warmup", flags.warmup},
      {"reps", flags.reps},
      {"results", rows},
  };
  std::cout << out.dump(2) << "\n";
}

int run_bench_attention(const BenchFlags& flags) {
  check(flags.device == "cpu", "--device " + flags.device,
        "not available in this build (it has no CUDA device path yet; use --device cpu)");
  BenchCase bench;
  bench.batch = flags.batch;
  bench.heads = flags.heads;
  bench.kv_heads = flags.kv_heads;
  bench.q_len = flags.decode ? 1 : flags.seq_len;
  bench.kv_len = flags.seq_len;
  bench.head_dim = flags.head_dim;
  bench.dtype = parse_dtype(flags.dtype);
  const std::vector<const attention::Backend*> backends = resolve_backends(flags.backends);

  Context ctx(flags.threads);
  Allocator& allocator = ctx.allocator();
  std::mt19937_64 rng(flags.seed);
  const Shape q_shape = {bench.batch, bench.heads, bench.q_len, bench.head_dim};
  const Shape kv_shape = {bench.batch, bench.kv_heads, bench.kv_len, bench.head_dim};
  attention::Call call;
  call.q = random_tensor(q_shape, bench.dtype, rng, allocator);
  call.k = random_tensor(kv_shape, bench.dtype, rng, allocator);
  call.v = random_tensor(kv_shape, bench.dtype, rng, allocator);
  call.out = Tensor::empty(q_shape, bench.dtype, allocator);
  call.kv_len = bench.kv_len;
  call.scale = 1.0f / std::sqrt(static_cast<float>(bench.head_dim));

  std::vector<BackendResult> results;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    std::cerr << "bench-attention: " << backends[i]->name() << " (" << i + 1 << "/"
              << backends.size() << ") ...\n";
    results.push_back(bench_backend(ctx, *backends[i], call, flags));
  }

  if (flags.output == "json") {
    print_json(bench, flags, ctx.threads(), results);
  } else {
    print_markdown(bench, flags, ctx.threads(), results);
  }
  const bool any_ran = std::any_of(results.begin(), results.end(),
                                   [](const BackendResult& r) { return !r.unsupported_reason; });
  check(any_ran, "bench-attention", "no backend could run this case (see the table)");
  return 0;
}

}  // namespace

Subcommand add_bench_attention(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench-attention", "Time the attention op alone, for each backend, on random inputs");
  sub->add_option("--attn", flags->backends,
                  "Backends to time: all, or a comma list of " + attention::backend_list())
      ->delimiter(',')
      ->default_str("all")
      ->check(CLI::Validator(
          [](const std::string& name) -> std::string {
            try {
              if (name != "all") attention::find_backend(name);
              return {};
            } catch (const Error&) {
              return "unknown attention backend '" + name + "' (valid: all, " +
                     attention::backend_list() + ")";
            }
          },
          "BACKEND"));
  const auto positive = CLI::Range(std::int64_t{1}, std::int64_t{1} << 24);
  sub->add_option("--batch", flags->batch, "Batch size")->capture_default_str()->check(positive);
  sub->add_option("--heads", flags->heads, "Query heads")->capture_default_str()->check(positive);
  CLI::Option* kv_heads =
      sub->add_option("--kv-heads", flags->kv_heads, "Key/value heads (default: --heads)")
          ->check(positive);
  sub->add_option("--seq-len", flags->seq_len, "Tokens: prefill length, or the decode cache")
      ->capture_default_str()
      ->check(positive);
  sub->add_option("--head-dim", flags->head_dim, "Head dimension")
      ->capture_default_str()
      ->check(positive);
  sub->add_flag("--decode", flags->decode,
                "One new query token against a cache of --seq-len (default: causal prefill)");
  sub->add_option("--dtype", flags->dtype, "Element type of q, k, v and out")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--device", flags->device, "Where the tensors live")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--warmup", flags->warmup, "Untimed calls per backend first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  sub->add_option("--reps", flags->reps, "Timed calls per backend")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  add_threads_flag(*sub, flags->threads);
  sub->add_option("--seed", flags->seed, "Seed of the random inputs")->capture_default_str();
  sub->add_option("--output", flags->output, "md (a Markdown table) or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json"}));
  // Runs once the flags are parsed, so that a bad head split is a usage error (exit 2).
  sub->callback([flags, kv_heads] {
    if (kv_heads->count() == 0) flags->kv_heads = flags->heads;
    if (flags->heads % flags->kv_heads != 0) {
      throw CLI::ValidationError("--kv-heads", "--heads (" + std::to_string(flags->heads) +
                                                   ") must be a multiple of --kv-heads (" +
                                                   std::to_string(flags->kv_heads) + ")");
    }
  });
  return {sub, [flags] { return run_bench_attention(*flags); }};
}

}  // namespace attnscope::cli
