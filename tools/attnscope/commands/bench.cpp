// `attnscope bench`: llama-bench for attnscope. Times every combination of the values given for
// --model, --attn, --device, --dtype, --batch and the tests (prefill ppN, decode tgN, decode after
// a filled context tgN @ dD), or the attention op alone (--op attention), or this machine's read
// bandwidth (--op membw), or many requests through the engine (--op serving,
// commands/bench_serving.h).
//
// Each test runs --warmup times in full, then --repetitions times; the repetitions go round the
// whole grid (rep 1 of every test, then rep 2, ...) so that machine noise hits all rows alike.
// A prefill test ppN is one forward pass over batch x N random ids: tokens/s = batch N / time.
// A decode test tgN @ dD first fills the cache with D random ids per row (untimed for tokens/s),
// then takes N greedy steps of one token per row: tokens/s = batch N / time of the N steps; time
// to first token (TTFT) = the fill plus the first step. Weight GB/s = parameter bytes read per
// step x steps / time (each parameter is read once per step at its stored dtype, the tied
// embedding as LM head; on the cpu --dtype bf16|f16|q8_0 narrows the matrices only, see
// ModelDTypes; q8_0 counts its 34-byte blocks of 32 weights).
// Peak memory is the allocator's peak during the test: weights, KV cache and activations.
// The report (provenance, machine, one row per test) goes to stdout in the --output format
// (tools/attnscope/report/bench_output.h). Cost: the tests themselves; each model is loaded once,
// for all its tests.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "git_revision.h"  // generated at build time (cmake/git_revision.cmake)
#include "ops/attention/registry.h"
#include "ops/sample.h"
#include "runtime/error.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/elapsed.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/machine_info.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/commands/bench_serving.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/attention_timing.h"
#include "tools/attnscope/measure/read_bandwidth.h"
#include "tools/attnscope/report/bench_output.h"

namespace attnscope::cli {

namespace {

using nlohmann::json;

// STEM_mean, STEM_stddev, STEM_median and the median's 95% interval STEM_median_low/high; all
// null when the test has no such samples.
void add_stats(json& row, const std::string& stem, const std::optional<TimingStats>& stats) {
  auto value = [&](double TimingStats::*field) { return stats ? json(*stats.*field) : json(); };
  row[stem + "_mean"] = value(&TimingStats::mean);
  row[stem + "_stddev"] = value(&TimingStats::stddev);
  row[stem + "_median"] = value(&TimingStats::median);
  row[stem + "_median_low"] = value(&TimingStats::median_low);
  row[stem + "_median_high"] = value(&TimingStats::median_high);
}

struct BenchFlags {
  std::string op = "model";
  std::vector<std::string> models = {"synthetic:gpt2"};
  std::vector<std::string> backends = {"flash"};
  std::vector<std::string> devices = {"cpu"};
  std::vector<std::string> dtypes = {"f32"};
  std::vector<std::int64_t> batches = {1};
  std::vector<std::int64_t> prompt_lens = {512};
  std::vector<std::int64_t> gens = {128};
  std::vector<std::int64_t> depths = {0};
  int repetitions = 5;
  int warmup = 1;
  int threads = 0;
  std::int64_t membw_mib = 512;
  bool read_roof = false;  // model op on the cpu: decode weight GB/s as a share of the probe's
  std::string output = "md";
  AttentionBenchFlags attention;  // the shape flags of --op attention
  ServingFlags serving;           // the workload and engine flags of --op serving
  CLI::Option* attn_option = nullptr;
  CLI::Option* batch_option = nullptr;
  CLI::Option* kv_heads_option = nullptr;
};

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// ---- the model grid ----

struct ModelTest {
  std::string model, backend, device, dtype;
  std::int64_t batch = 1, prompt_len = 0, gen = 0, depth = 0;

  bool is_prefill() const { return prompt_len > 0; }
  std::string name() const {
    if (is_prefill()) return "pp" + std::to_string(prompt_len);
    return "tg" + std::to_string(gen) + (depth ? " @ d" + std::to_string(depth) : "");
  }
};

struct ModelSamples {
  std::vector<double> seconds;  // of the timed phase: the forward pass, or the decode steps
  std::vector<double> ttft_ms;  // decode tests only
  std::size_t peak_bytes = 0;
};

// Every combination for one model on one device and dtype, in grid order.
std::vector<ModelTest> model_grid(const BenchFlags& flags, const std::string& model,
                                  const std::string& device, const std::string& dtype) {
  std::vector<ModelTest> tests;
  for (const ops::attention::Backend* backend : ops::attention::resolve_backends(flags.backends)) {
    for (std::int64_t batch : flags.batches) {
      const ModelTest base{model, std::string(backend->name()), device, dtype, batch};
      for (std::int64_t prompt_len : flags.prompt_lens) {
        if (prompt_len == 0) continue;
        ModelTest test = base;
        test.prompt_len = prompt_len;
        tests.push_back(test);
      }
      for (std::int64_t gen : flags.gens) {
        if (gen == 0) continue;
        for (std::int64_t depth : flags.depths) {
          ModelTest test = base;
          test.gen = gen;
          test.depth = depth;
          tests.push_back(test);
        }
      }
    }
  }
  return tests;
}

// Refuses a test the model's context or the device's memory cannot hold, before it allocates.
void check_fits(Context& ctx, LanguageModel& model, const ModelTest& test) {
  const ModelConfig& config = model.config();
  const std::int64_t tokens = test.is_prefill() ? test.prompt_len : test.depth + test.gen;
  const std::string where = test.model + " " + test.name();
  check(tokens <= config.context_length, where,
        std::to_string(tokens) + " tokens exceed the model's context length of " +
            std::to_string(config.context_length) + " (lower --prompt-len, --gen or --depth)");
  model.set_attention(test.backend);
  // The largest step: the prefill, or the fill of --depth (at least the one decode token).
  const std::int64_t step_tokens =
      test.is_prefill() ? test.prompt_len : std::max<std::int64_t>(test.depth, 1);
  model.require_memory(ctx, test.batch, tokens, step_tokens, false, where + ": batch",
                       "lower -b/--batch, --prompt-len or --depth");
}

std::vector<std::int32_t> random_ids(std::int64_t count, const ModelConfig& config,
                                     std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int32_t> id(0,
                                                 static_cast<std::int32_t>(config.vocab_size) - 1);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(count));
  for (std::int32_t& value : ids) value = id(rng);
  return ids;
}

// The most likely next token of each row of logits [batch, 1, V], chosen on ctx's device: on a
// GPU only the ids come back, which also waits for the step to finish.
void greedy_next(Context& ctx, const Tensor& logits, std::vector<std::int32_t>& next,
                 std::int64_t vocab) {
  const auto batch = static_cast<std::int64_t>(next.size());
  Tensor ids = Tensor::empty({batch}, DType::I32, ctx.allocator());
  ops::sample_tokens(ctx, logits.reshape({batch, vocab}), SamplingOptions{}, 0, ids);
  const Tensor host = to_host(ctx, ids);
  std::copy_n(host.data<std::int32_t>(), batch, next.begin());
}

// Runs one test once and appends its timings to `samples`.
void run_model_test(Context& ctx, LanguageModel& model, StepRunner& runner, const ModelTest& test,
                    ModelSamples& samples) {
  const ModelConfig& config = model.config();
  model.set_attention(test.backend);
  std::mt19937_64 rng(static_cast<std::uint64_t>(test.prompt_len * 7919 + test.depth));
  ctx.allocator().reset_peak();
  if (test.is_prefill()) {
    const std::vector<std::int32_t> ids = random_ids(test.batch * test.prompt_len, config, rng);
    KVCache cache = model.new_cache(ctx, test.batch, test.prompt_len);
    const auto start = std::chrono::steady_clock::now();
    model.forward(ctx, ids, test.batch, cache, runner);
    ctx.synchronize();
    samples.seconds.push_back(seconds_since(start));
  } else {
    const std::vector<std::int32_t> context = random_ids(test.batch * test.depth, config, rng);
    // Decoding from no context starts at end-of-text, as generate's empty prompt does.
    const std::int64_t first_token = config.eos_in_vocabulary() ? config.eos_token_id() : 0;
    std::vector<std::int32_t> next(static_cast<std::size_t>(test.batch),
                                   static_cast<std::int32_t>(first_token));
    KVCache cache = model.new_cache(ctx, test.batch, test.depth + test.gen);
    const auto start = std::chrono::steady_clock::now();
    if (test.depth > 0) {
      greedy_next(ctx, model.forward(ctx, context, test.batch, cache, runner), next,
                  config.vocab_size);
    }
    const auto decode_start = std::chrono::steady_clock::now();
    for (std::int64_t step = 0; step < test.gen; ++step) {
      greedy_next(ctx, model.forward(ctx, next, test.batch, cache, runner), next,
                  config.vocab_size);
      if (step == 0) samples.ttft_ms.push_back(seconds_since(start) * 1e3);
    }
    samples.seconds.push_back(seconds_since(decode_start));
  }
  samples.peak_bytes = std::max(samples.peak_bytes, ctx.allocator().peak_bytes());
}

json model_row(const ModelTest& test, const ModelSamples& samples, std::uint64_t weight_bytes,
               int threads) {
  const double tokens =
      static_cast<double>(test.batch * (test.is_prefill() ? test.prompt_len : test.gen));
  std::vector<double> tokens_per_s;
  for (double s : samples.seconds) tokens_per_s.push_back(tokens / s);
  const TimingStats rate = summarize(tokens_per_s);
  const bool decode = !test.is_prefill();
  // Every weight is read once per decode step, at the dtype it is stored in.
  const double weights_gb_per_s =
      rate.mean / static_cast<double>(test.batch) * static_cast<double>(weight_bytes) / 1e9;
  json row = {{"op", "model"},
              {"implementation", "attnscope"},
              {"model", test.model},
              {"backend", test.backend},
              {"device", test.device},
              {"dtype", test.dtype},
              {"weight_bytes", weight_bytes},
              {"threads", threads},
              {"batch", test.batch},
              {"test", test.name()},
              {"prompt_tokens", test.prompt_len},
              {"gen_tokens", test.gen},
              {"depth", test.depth},
              {"samples_s", samples.seconds},
              {"samples_tokens_per_s", tokens_per_s},
              {"samples_ttft_ms", samples.ttft_ms},  // decode tests only
              {"peak_bytes", samples.peak_bytes},
              {"weights_gb_per_s_mean", decode ? json(weights_gb_per_s) : json()}};
  add_stats(row, "tokens_per_s", rate);
  add_stats(row, "ttft_ms", decode ? std::optional(summarize(samples.ttft_ms)) : std::nullopt);
  return row;
}

// The grid of tests of one model on one context: warm-up rounds, then timed rounds.
json run_model_tests(const BenchFlags& flags, Context& ctx, const std::string& spec,
                     const std::string& device, const std::string& dtype) {
  const std::unique_ptr<LanguageModel> loaded = load_model(spec, ctx, parse_dtype(dtype));
  LanguageModel& model = *loaded;
  StepRunner runner;  // GPU decode steps as CUDA graphs, kept across the model's tests
  const std::vector<ModelTest> tests = model_grid(flags, spec, device, dtype);
  check(!tests.empty(), "bench", "no tests: --prompt-len and --gen are all 0");
  for (const ModelTest& test : tests) check_fits(ctx, model, test);
  std::vector<ModelSamples> samples(tests.size());
  const int rounds = flags.warmup + flags.repetitions;
  for (int round = 0; round < rounds; ++round) {
    const bool warming = round < flags.warmup;
    for (std::size_t i = 0; i < tests.size(); ++i) {
      const ModelTest& test = tests[i];
      std::cerr << "bench: " << spec << " " << test.backend << " " << device << " " << dtype
                << " batch " << test.batch << " " << test.name() << ": "
                << (warming ? "warm-up"
                            : "rep " + std::to_string(round - flags.warmup + 1) + "/" +
                                  std::to_string(flags.repetitions))
                << "\n";
      ModelSamples warmup_samples;
      run_model_test(ctx, model, runner, test, warming ? warmup_samples : samples[i]);
    }
  }
  json rows = json::array();
  for (std::size_t i = 0; i < tests.size(); ++i) {
    rows.push_back(model_row(tests[i], samples[i], model.weight_bytes(), ctx.threads()));
  }
  return rows;
}

// With --read-roof on the cpu: the read-bandwidth probe's best (measure/read_bandwidth.h), once
// per context before its models, and each decode row's weight GB/s as a share of it.
std::optional<ReadVariant> read_roof(const BenchFlags& flags, const Context& ctx) {
  if (!flags.read_roof || ctx.device() != Device::CPU) return std::nullopt;
  std::cerr << "bench: read-bandwidth probe, " << flags.membw_mib << " MiB\n";
  const ReadBandwidth probe = measure_read_bandwidth(ctx, flags.membw_mib * 1024 * 1024, 1, 3);
  return probe.variants[probe.best];
}

void add_read_share(json& row, const ReadVariant& roof) {
  row["read_roof_gb_per_s"] = roof.median_gb_per_s;
  row["read_roof_variant"] = roof.name;
  if (row["weights_gb_per_s_mean"].is_null()) return;
  row["weights_share_of_read_roof"] =
      row["weights_gb_per_s_mean"].get<double>() / roof.median_gb_per_s;
}

// Every device x dtype x model: load once, then the grid of tests.
json run_model_grid(const BenchFlags& flags, int& threads, std::string& gpu) {
  json rows = json::array();
  for (const std::string& device : flags.devices) {
    for (const std::string& dtype : flags.dtypes) {
      const std::unique_ptr<Context> context =
          make_context(DeviceOptions{device, dtype, flags.threads});
      threads = context->threads();
      if (context->device() == Device::CUDA) gpu = context->describe();
      const std::optional<ReadVariant> roof = read_roof(flags, *context);
      for (const std::string& spec : flags.models) {
        for (json& row : run_model_tests(flags, *context, spec, device, dtype)) {
          if (roof) add_read_share(row, *roof);
          rows.push_back(std::move(row));
        }
      }
    }
  }
  return rows;
}

// ---- the attention op ----

json run_attention_grid(const BenchFlags& flags, int& threads) {
  json rows = json::array();
  for (const std::string& device : flags.devices) {
    for (const std::string& dtype : flags.dtypes) {
      for (std::int64_t batch : flags.batches) {
        AttentionBenchFlags op = flags.attention;
        op.device = device;
        op.dtype = dtype;
        op.batch = flags.batch_option->count() ? batch : op.batch;
        op.backends = flags.attn_option->count() ? flags.backends : op.backends;
        op.warmup = flags.warmup;
        op.reps = flags.repetitions;
        op.threads = flags.threads;
        op.kv_dtype = flags.serving.engine.kv_dtype;  // --kv-dtype, with --paged
        const AttentionReport report = measure_attention(op, "bench --op attention");
        threads = report.threads;
        const ops::attention::Shape& shape = report.shape;
        for (const BackendResult& r : report.results) {
          json row = shape_json(shape);
          row.update({{"op", "attention"},
                      {"implementation", "attnscope"},
                      {"backend", r.backend},
                      {"device", device},
                      {"dtype", dtype},
                      {"threads", report.threads},
                      {"causal", shape.causal},
                      {"paged_block_tokens", report.block_tokens},
                      {"paged_kv_dtype", dtype_name(report.kv_dtype)},
                      {"test", shape.q_len == 1 ? "decode" : "prefill"}});
          if (r.unsupported_reason) {
            row["error"] = *r.unsupported_reason;
            rows.push_back(row);
            continue;
          }
          add_stats(row, "time_ms", r.stats);
          row.update({{"samples_ms", r.times_ms},
                      {"gflops", gflop_per_s(r.predicted, r.stats.median)},
                      {"peak_temporary_bytes", r.peak_temporary_bytes},
                      {"predicted_temporary_bytes", r.predicted.temporary_bytes},
                      {"steps_observed", r.steps_observed},
                      {"steps_predicted", r.predicted.steps}});
          rows.push_back(row);
        }
      }
    }
  }
  return rows;
}

// ---- read bandwidth ----

// Reads a buffer of --membw-mib MiB with every thread, each of the probe's ways
// (measure/read_bandwidth.h), warmup passes first, and reports GB/s per pass: a row per way, the
// fastest marked best. That is the ceiling a decode step, which reads every weight once, can
// approach.
json run_membw(const BenchFlags& flags, int& threads) {
  check(flags.devices == std::vector<std::string>{"cpu"}, "--device",
        "--op membw measures host memory: cpu only");
  const Context ctx(flags.threads);
  threads = ctx.threads();
  const ReadBandwidth probe =
      measure_read_bandwidth(ctx, flags.membw_mib * 1024 * 1024, flags.warmup, flags.repetitions);
  json rows = json::array();
  for (std::size_t v = 0; v < probe.variants.size(); ++v) {
    const ReadVariant& variant = probe.variants[v];
    json row = {{"op", "membw"},
                {"implementation", "attnscope"},
                {"test", "read " + std::to_string(flags.membw_mib) + " MiB"},
                {"variant", variant.name},
                {"best", v == probe.best},
                {"threads", threads},
                {"samples_gb_per_s", variant.gb_per_s},
                {"checksum", variant.checksum}};
    add_stats(row, "gb_per_s", summarize(variant.gb_per_s));
    rows.push_back(row);
  }
  return rows;
}

int run_bench(const BenchFlags& flags) {
  int threads = 0;
  std::string gpu;  // the GPU's description when one was used
  json results;
  if (flags.op == "model") {
    results = run_model_grid(flags, threads, gpu);
  } else if (flags.op == "attention") {
    results = run_attention_grid(flags, threads);
  } else if (flags.op == "serving") {
    results =
        run_serving_grid(flags.serving,
                         {flags.models, flags.backends, flags.devices, flags.dtypes, flags.threads,
                          flags.repetitions, flags.warmup, flags.attention.seed},
                         threads, gpu);
  } else {
    results = run_membw(flags, threads);
  }
  const json report = {
      {"tool", "attnscope"},
      {"attnscope_revision", ATTNSCOPE_GIT_REVISION},
      {"date", utc_now()},
      {"op", flags.op},
      {"repetitions", flags.repetitions},
      {"warmup", flags.warmup},
      {"machine",
       {{"cpu", cpu_model()},
        {"cpu_kernels", cpu_kernels()},
        {"threads", threads},
        {"gpu", gpu.empty() ? json(nullptr) : json(gpu)}}},
      {"results", results},
  };
  print_bench_report(report, flags.output);
  return 0;
}

}  // namespace

Subcommand add_bench(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Benchmark every combination of models, backends and tests (like llama-bench)");
  sub->add_option("--op", flags->op,
                  "model (prefill and decode tests), attention (the op alone, at the study's "
                  "shape), membw (read bandwidth), or serving (many requests through the "
                  "engine: continuous batching on a paged KV cache)")
      ->capture_default_str()
      ->check(CLI::IsMember({"model", "attention", "membw", "serving"}));
  sub->add_option("-m,--model", flags->models, "Comma list of DIR|synthetic:NAME")
      ->delimiter(',')
      ->default_str("synthetic:gpt2");
  flags->attn_option =
      add_attention_list_flag(*sub, flags->backends, AttentionList::AllowingAll,
                              "Comma list of backends, or all (" + ops::attention::backend_list() +
                                  "); default flash, all for --op attention",
                              "");
  sub->add_option("--device", flags->devices, "Comma list: cpu, cuda")
      ->delimiter(',')
      ->default_str("cpu")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--dtype", flags->dtypes,
                  "Comma list: f32, f16, bf16, q8_0 (storage: on the cpu of the weight matrices, "
                  "activations stay f32; on cuda of weights and activations, q8_0 cpu only; "
                  "--op attention: f32, f16, bf16)")
      ->delimiter(',')
      ->default_str("f32")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}));
  const auto count = CLI::Range(std::int64_t{0}, std::int64_t{1} << 20);
  flags->batch_option =
      sub->add_option("-b,--batch", flags->batches,
                      "Comma list of batch sizes (equal-length rows); default 1, 8 for --op "
                      "attention")
          ->delimiter(',')
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  sub->add_option("-p,--prompt-len", flags->prompt_lens, "Comma list: prefill tests ppN (0: none)")
      ->delimiter(',')
      ->default_str("512")
      ->check(count);
  sub->add_option("-n,--gen", flags->gens, "Comma list: decode tests tgN (0: none)")
      ->delimiter(',')
      ->default_str("128")
      ->check(count);
  sub->add_option("-d,--depth", flags->depths,
                  "Comma list: tokens in the cache before each decode test (tgN @ dD)")
      ->delimiter(',')
      ->default_str("0")
      ->check(count);
  sub->add_option("-r,--repetitions,--reps", flags->repetitions, "Timed runs of each test")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--warmup", flags->warmup, "Untimed full runs of each test first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  add_threads_flag(*sub, flags->threads);
  sub->add_option("-o,--output", flags->output,
                  "md (Markdown table), csv, json (every repetition and the machine), jsonl")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "csv", "json", "jsonl"}));
  add_attention_shape_flags(*sub, flags->attention, flags->kv_heads_option);
  sub->add_flag("--read-roof", flags->read_roof,
                "--op model on the cpu: run the read-bandwidth probe first (--op membw's best "
                "way) and give each decode test's weight GB/s as a share of it");
  sub->add_option("--membw-mib", flags->membw_mib, "Buffer of --op membw (and --read-roof), in MiB")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  add_serving_flags(*sub, flags->serving);
  // Runs once the flags are parsed, so that a bad head split, or a shape flag of the attention op
  // beside another op (which would ignore it), is a usage error (exit 2).
  sub->callback([sub, flags] {
    finish_attention_shape(flags->attention, *flags->kv_heads_option);
    if (flags->op == "attention") return;
    for (const char* name : {"--heads", "--kv-heads", "--seq-len", "--head-dim", "--decode",
                             "--bf16-products", "--paged"}) {
      if (sub->get_option(name)->count() > 0) {
        throw CLI::ValidationError(name, "is a shape flag of --op attention");
      }
    }
  });
  return {sub, [flags] { return run_bench(*flags); }};
}

}  // namespace attnscope::cli
