// `attnscope bench --op serving` (tools/attnscope/commands/bench_serving.h).
#include "tools/attnscope/commands/bench_serving.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "ops/attention/registry.h"
#include "profiler/attach.h"
#include "profiler/chrome_trace.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/engine_flags.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/measure/serving_run.h"
#include "tools/attnscope/report/statistics.h"

namespace attnscope::cli {

namespace {

using nlohmann::json;

LengthRange parse_range(const std::string& text, const char* flag) {
  const std::size_t colon = text.find(':');
  try {
    std::size_t used = 0;
    const std::string first = text.substr(0, colon);
    LengthRange range;
    range.min = std::stoll(first, &used);
    check(used == first.size(), flag, "");
    range.max = range.min;
    if (colon != std::string::npos) {
      const std::string second = text.substr(colon + 1);
      range.max = std::stoll(second, &used);
      check(used == second.size(), flag, "");
    }
    check(1 <= range.min && range.min <= range.max, flag, "");
    return range;
  } catch (const std::exception&) {
    throw Error(flag, "expected N or MIN:MAX with 1 <= MIN <= MAX, got '" + text + "'");
  }
}

double quantile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return quantile_of_sorted(values, p);
}

// The row of one grid cell from its rounds' results.
json serving_row(const std::vector<ServingResult>& rounds, const std::string& description) {
  std::vector<double> requests_per_s, tokens_per_s, ttft, tpot, itl;
  for (const ServingResult& r : rounds) {
    requests_per_s.push_back(r.requests_per_s());
    tokens_per_s.push_back(r.output_tokens_per_s());
    ttft.insert(ttft.end(), r.ttft_ms.begin(), r.ttft_ms.end());
    tpot.insert(tpot.end(), r.tpot_ms.begin(), r.tpot_ms.end());
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
  }
  const ServingResult& last = rounds.back();
  const Estimate rate = median_estimate(tokens_per_s, 0.95);
  return {
      {"workload", description},
      {"concurrency", last.concurrency},
      {"requests", last.requests},
      {"prompt_tokens", last.prompt_tokens},
      {"output_tokens", last.output_tokens},
      {"samples_output_tokens_per_s", tokens_per_s},
      {"samples_requests_per_s", requests_per_s},
      {"output_tokens_per_s_median", rate.value},
      {"output_tokens_per_s_median_low", rate.interval.low},
      {"output_tokens_per_s_median_high", rate.interval.high},
      {"requests_per_s_median", median(requests_per_s)},
      {"ttft_ms_median", quantile(ttft, 0.5)},
      {"ttft_ms_p99", quantile(ttft, 0.99)},
      {"tpot_ms_median", quantile(tpot, 0.5)},
      {"tpot_ms_p99", quantile(tpot, 0.99)},
      {"itl_ms_p99", quantile(itl, 0.99)},
      {"steps", last.steps},
      {"preemptions", last.preemptions},
      {"prefix_hits", last.prefix_hits},
      {"prefix_lookups", last.prefix_lookups},
      {"kv_reserved_bytes", last.reserved_bytes},
      {"kv_used_bytes_mean", last.paged_used_bytes},
      {"kv_used_bytes_peak", last.peak_used_bytes},
      {"kv_paged_waste",
       last.paged_used_bytes > 0 ? last.paged_wasted_bytes / last.paged_used_bytes : 0.0},
      {"kv_contiguous_bytes_mean", last.contiguous_bytes},
      {"kv_contiguous_waste",
       last.contiguous_bytes > 0 ? 1.0 - last.held_position_bytes / last.contiguous_bytes : 0.0}};
}

}  // namespace

void add_serving_flags(CLI::App& app, ServingFlags& flags) {
  const std::string group = "--op serving";
  app.add_option("--requests", flags.requests,
                 "Requests of the random workload (or the first "
                 "N of --dataset, 0: all)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 24))
      ->group(group);
  app.add_option("-c,--concurrency", flags.concurrency,
                 "Comma list: requests in flight at once (1 = one at a time)")
      ->delimiter(',')
      ->default_str("1,4,16,64")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->group(group);
  app.add_option("--input-len", flags.input_len, "Prompt tokens, N or MIN:MAX (uniform)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--output-len", flags.output_len, "New tokens per request, N or MIN:MAX")
      ->capture_default_str()
      ->group(group);
  app.add_option("--shared-prefix", flags.shared_prefix,
                 "The first N prompt tokens are the same in every request (prefix caching)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 24))
      ->group(group);
  app.add_option("--dataset", flags.dataset,
                 "JSON lines {\"prompt_ids\": [...], \"max_tokens\": N} instead of the random "
                 "workload")
      ->group(group);
  app.add_flag("--json-object", flags.json_object,
               "Every request in JSON mode (response_format json_object): its reply is one JSON "
               "object, and it ends when the object closes")
      ->group(group);
  app.add_option("--json-schema", flags.json_schema,
                 "Every request's reply valid under this JSON schema file (response_format "
                 "json_schema, structured outputs)")
      ->excludes("--json-object")
      ->group(group);
  app.add_option("--tokenizer", flags.tokenizer,
                 "The tokenizer folder for --json-object or --json-schema (default: the model's "
                 "own; GPT-2's for synthetic GPT-2 shapes)")
      ->group(group);
  add_engine_flags(app, flags.engine, group);
  app.add_option("--trace", flags.trace,
                 "Also write a Chrome trace (Perfetto) of one more, profiled run: the engine's "
                 "steps and batches, and a track per request")
      ->group(group);
}

json run_serving_grid(const ServingFlags& flags, const ServingGrid& grid, int& threads,
                      std::string& gpu) {
  const engine::EngineOptions options = engine_options(flags.engine);
  // JSON mode or a JSON schema, checked before any model loads.
  const char* schema_flag = flags.json_object ? "--json-object" : "--json-schema";
  const std::string schema = schema_of_flags(flags.json_object, flags.json_schema);
  json rows = json::array();
  bool traced = false;
  for (const std::string& device : grid.devices) {
    for (const std::string& dtype : grid.dtypes) {
      const std::unique_ptr<Context> ctx = make_context(DeviceOptions{device, dtype, grid.threads});
      threads = ctx->threads();
      if (ctx->device() == Device::CUDA) gpu = ctx->describe();
      for (const std::string& spec : grid.models) {
        const std::unique_ptr<LanguageModel> model = load_model(spec, *ctx, parse_dtype(dtype));
        std::optional<TextTokenizer> tokenizer;
        if (!schema.empty()) {
          tokenizer = find_tokenizer(flags.tokenizer, spec);
          check(tokenizer.has_value(), schema_flag,
                "a JSON reply needs the tokenizer of " + spec + ": pass --tokenizer");
        }
        const engine::TokenVocabulary vocabulary =
            tokenizer ? tokenizer->vocabulary() : engine::TokenVocabulary{};
        ServingWorkload workload =
            flags.dataset.empty()
                ? random_workload(flags.requests, parse_range(flags.input_len, "--input-len"),
                                  parse_range(flags.output_len, "--output-len"),
                                  flags.shared_prefix, model->config().vocab_size, grid.seed)
                : dataset_workload(flags.dataset, flags.requests,
                                   parse_range(flags.output_len, "--output-len").max);
        // A request the context cuts short would measure fewer tokens than the workload says.
        for (const engine::Request& request : workload.requests) {
          const auto prompt = static_cast<std::int64_t>(request.prompt.size());
          check(prompt + request.max_tokens <= model->config().context_length, "--output-len",
                "a request of " + std::to_string(prompt) + " prompt tokens and " +
                    std::to_string(request.max_tokens) + " new ones passes " + spec +
                    "'s context of " + std::to_string(model->config().context_length) +
                    " (a sequence holds its prompt and its new tokens): lower --input-len or "
                    "--output-len");
        }
        if (!schema.empty()) {
          for (engine::Request& request : workload.requests) request.json_schema = schema;
          workload.description += flags.json_object ? ", JSON mode" : ", JSON schema";
        }
        for (const ops::attention::Backend* backend :
             ops::attention::resolve_backends(grid.backends)) {
          model->set_attention(backend->name());
          std::vector<std::vector<ServingResult>> cells(flags.concurrency.size());
          for (int round = 0; round < grid.warmup + grid.repetitions; ++round) {
            const bool warming = round < grid.warmup;
            for (std::size_t c = 0; c < flags.concurrency.size(); ++c) {
              std::cerr << "bench: " << spec << " " << backend->name() << " " << device << " "
                        << dtype << " serving, concurrency " << flags.concurrency[c] << ": "
                        << (warming ? "warm-up"
                                    : "rep " + std::to_string(round - grid.warmup + 1) + "/" +
                                          std::to_string(grid.repetitions))
                        << "\n";
              ServingResult result =
                  run_serving(*model, *ctx, options, workload, flags.concurrency[c], vocabulary);
              if (!warming) cells[c].push_back(std::move(result));
            }
          }
          // Each round's throughput against the same round's one-at-a-time run.
          const auto one = std::find(flags.concurrency.begin(), flags.concurrency.end(), 1);
          for (std::size_t c = 0; c < cells.size(); ++c) {
            json row = serving_row(cells[c], workload.description);
            const DType kv_dtype = options.kv_dtype.value_or(model->activation_dtype());
            row.update({{"op", "serving"},
                        {"implementation", "attnscope"},
                        {"model", spec},
                        {"backend", backend->name()},
                        {"device", device},
                        {"dtype", dtype},
                        {"threads", threads},
                        {"block_size", flags.engine.block_size},
                        {"kv_dtype", dtype_name(kv_dtype)},
                        {"max_batch_tokens", flags.engine.max_batch_tokens}});
            if (one != flags.concurrency.end()) {
              const auto& base = cells[static_cast<std::size_t>(one - flags.concurrency.begin())];
              std::vector<double> ratios;
              for (std::size_t r = 0; r < cells[c].size(); ++r) {
                ratios.push_back(cells[c][r].output_tokens_per_s() / base[r].output_tokens_per_s());
              }
              row["speedup_vs_one_at_a_time"] = median(ratios);
              row["samples_speedup_vs_one_at_a_time"] = ratios;
            }
            rows.push_back(std::move(row));
          }
          if (!flags.trace.empty() && !traced) {
            std::cerr << "bench: profiled run for --trace " << flags.trace << "\n";
            profiler::CpuTracer tracer;
            {
              const profiler::Profiling on(*ctx, tracer);
              run_serving(*model, *ctx, options, workload, flags.concurrency.back(), vocabulary);
            }
            write_output_file(flags.trace, [&](std::ostream& out) {
              profiler::write_chrome_trace(tracer.trace(), "attnscope bench --op serving", out);
            });
            traced = true;
          }
        }
      }
    }
  }
  return rows;
}

}  // namespace attnscope::cli
