// `attnscope bench-attention` (also `attnscope bench --op attention`): times the attention op
// alone, backend by backend, on random inputs of one shape, and sets each measurement beside what
// the backend's cost model predicts (the measurement: tools/attnscope/measure/attention_timing.h).
// Progress goes to stderr; a Markdown table (or one JSON object) goes to stdout.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ops/attention/registry.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/machine_info.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/attention_timing.h"
#include "tools/attnscope/report/markdown.h"
#include "tools/attnscope/report/report_json.h"

namespace attnscope::cli {

namespace {

// The median of naive, the baseline of the speedup column, when it ran.
std::optional<double> naive_median_ms(const std::vector<BackendResult>& results) {
  for (const BackendResult& r : results) {
    if (r.backend == "naive" && !r.unsupported_reason) return r.stats.median;
  }
  return std::nullopt;
}

std::string mebibytes(std::size_t bytes) {
  return fixed(static_cast<double>(bytes) / (1024.0 * 1024.0), 2);
}

void print_markdown(const AttentionReport& report, const AttentionBenchFlags& flags) {
  const ops::attention::Shape& shape = report.shape;
  std::cout << "Attention alone: " << describe_shape(shape)
            << (report.block_tokens
                    ? "; paged, " + std::string(dtype_name(report.kv_dtype)) + " blocks of " +
                          std::to_string(report.block_tokens) + " positions in a random order"
                    : std::string())
            << "; " << dtype_name(shape.dtype) << " on " << report.device << ", threads "
            << report.threads << ", CPU " << cpu_model() << "; warmup " << flags.warmup << ", reps "
            << flags.reps << "\n\n";
  using Align = MarkdownTable::Align;
  MarkdownTable table({{"backend", Align::Left},
                       {"median ms"},
                       {"min..max ms"},
                       {"stddev ms"},
                       {"GFLOP/s"},
                       {"peak temporaries MiB"},
                       {"predicted MiB"},
                       {"steps observed/predicted"},
                       {"speedup vs naive"}});
  const std::optional<double> naive_ms = naive_median_ms(report.results);
  for (const BackendResult& r : report.results) {
    if (r.unsupported_reason) {
      table.add_row({r.backend, "unsupported: " + *r.unsupported_reason});
      continue;
    }
    const TimingStats& s = r.stats;
    table.add_row({r.backend, fixed(s.median, 3), fixed(s.min, 3) + ".." + fixed(s.max, 3),
                   fixed(s.stddev, 3), fixed(gflop_per_s(r.predicted, s.median), 2),
                   mebibytes(r.peak_temporary_bytes), mebibytes(r.predicted.temporary_bytes),
                   std::to_string(r.steps_observed) + "/" + std::to_string(r.predicted.steps),
                   naive_ms ? fixed(*naive_ms / s.median, 2) + "x" : "-"});
  }
  std::cout << table.text();
}

void print_json(const AttentionReport& report, const AttentionBenchFlags& flags) {
  const ops::attention::Shape& shape = report.shape;
  const std::optional<double> naive_ms = naive_median_ms(report.results);
  nlohmann::json rows = nlohmann::json::array();
  for (const BackendResult& r : report.results) {
    if (r.unsupported_reason) {
      rows.push_back({{"backend", r.backend}, {"error", *r.unsupported_reason}});
      continue;
    }
    const TimingStats& s = r.stats;
    rows.push_back({
        {"backend", r.backend},
        {"times_ms", r.times_ms},
        {"median_ms", s.median},
        {"min_ms", s.min},
        {"max_ms", s.max},
        {"mean_ms", s.mean},
        {"stddev_ms", s.stddev},
        {"gflops", gflop_per_s(r.predicted, s.median)},
        {"peak_temporary_bytes", r.peak_temporary_bytes},
        {"predicted_temporary_bytes", r.predicted.temporary_bytes},
        {"steps_observed", r.steps_observed},
        {"steps_predicted", r.predicted.steps},
        {"speedup_vs_naive",
         naive_ms ? nlohmann::json(*naive_ms / s.median) : nlohmann::json(nullptr)},
    });
  }
  nlohmann::json shape_fields = shape_json(shape);
  shape_fields.update({{"dtype", dtype_name(shape.dtype)},
                       {"device", flags.device},
                       {"causal", shape.causal},
                       {"paged_block_tokens", report.block_tokens},
                       {"paged_kv_dtype", dtype_name(report.kv_dtype)}});
  const nlohmann::json out = {
      {"shape", shape_fields}, {"device", report.device}, {"threads", report.threads},
      {"cpu", cpu_model()},    {"warmup", flags.warmup},  {"reps", flags.reps},
      {"results", rows},
  };
  std::cout << out.dump(2) << "\n";
}

}  // namespace

Subcommand add_bench_attention(CLI::App& app) {
  struct Flags {
    AttentionBenchFlags bench;
    std::string output = "md";
    CLI::Option* kv_heads = nullptr;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "bench-attention",
      "Time the attention op alone, for each backend, on random inputs (also: bench --op "
      "attention)");
  add_attention_list_flag(
      *sub, flags->bench.backends, AttentionList::AllowingAll,
      "Backends to time: all, or a comma list of " + ops::attention::backend_list(), "all");
  sub->add_option("--batch", flags->bench.batch, "Batch size")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  add_attention_shape_flags(*sub, flags->bench, flags->kv_heads);
  sub->add_option("--dtype", flags->bench.dtype, "Element type of q, k, v and out")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--kv-dtype", flags->bench.kv_dtype,
                  "With --paged: the blocks' element type (default: --dtype; f16, bf16 or q8_0 "
                  "under f32 on the cpu, as the engine's --kv-dtype)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}));
  sub->add_option("--device", flags->bench.device, "Where the tensors live")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--warmup", flags->bench.warmup, "Untimed calls per backend first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  sub->add_option("--reps", flags->bench.reps, "Timed calls per backend")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  add_threads_flag(*sub, flags->bench.threads);
  sub->add_option("--output", flags->output, "md (a Markdown table) or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json"}));
  // Runs once the flags are parsed, so that a bad head split is a usage error (exit 2).
  sub->callback([flags] { finish_attention_shape(flags->bench, *flags->kv_heads); });
  return {sub, [flags] {
            const AttentionReport report = measure_attention(flags->bench, "bench-attention");
            if (flags->output == "json") {
              print_json(report, flags->bench);
            } else {
              print_markdown(report, flags->bench);
            }
            const bool any_ran =
                std::any_of(report.results.begin(), report.results.end(),
                            [](const BackendResult& r) { return !r.unsupported_reason; });
            check(any_ran, "bench-attention", "no backend could run this case (see the table)");
            return 0;
          }};
}

}  // namespace attnscope::cli
