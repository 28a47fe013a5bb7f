// `attnscope explain`: why each attention backend is as fast as it is, for one attention call
// (the op alone, the study's shape by default) or for the calls of a model's prefill and decode
// steps. For each backend it states, before looking, what the backend will do (its Plan: the
// path, why, what computes it; its cost model: FLOPs, the bytes it must move, the score matrix
// it materialises), then runs it with the profiler on and says what ran (the steps, on a GPU the
// kernels cuBLAS or attnscope launched in each, read from CUPTI), how long it took, the FLOP/s
// and GB/s achieved, the arithmetic intensity and the share of this machine's roofline it
// reached (measure/ceilings.h), and whether the trace matched the plan. Backends that cannot
// serve the shape are listed with the reason (dtype, head dim, size limits, memory), without
// running. A model step adds the attention time of every layer (profiler::times_by_layer).
//
// Times: the op alone, the median of the unprofiled calls (profile_attention_op alternates
// profiled and unprofiled ones); a model step, the attention calls' time inside the profiled
// step (device time on a GPU), per call.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ops/attention/registry.h"
#include "profiler/summary.h"
#include "profiler/summary_json.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/machine_info.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/ceilings.h"
#include "tools/attnscope/measure/profile_run.h"
#include "tools/attnscope/report/report_json.h"
#include "tools/attnscope/report/roofline_svg.h"
#include "tools/attnscope/report/statistics.h"

namespace attnscope::cli {

namespace {

namespace attention = ops::attention;
using nlohmann::json;

struct ExplainFlags {
  std::vector<std::string> backends = {"all"};
  AttentionBenchFlags shape;  // the op alone: --batch, --heads, --seq-len, ... (its own defaults)
  std::string model;
  std::int64_t prompt_len = 128;
  DeviceOptions device;
  int reps = 4;
  bool refresh_ceilings = false;
  std::string json_path;
  std::string roofline_path;
};

// One step the trace saw directly inside an attention call, and on a GPU the work it launched.
struct ObservedStep {
  std::string name;
  double ms = 0;                     // its time in the explained call
  std::vector<std::string> kernels;  // CUPTI's names of the kernels, copies, memsets inside
};

struct Explained {
  std::string backend;
  std::string phase;  // "attention" (the op alone), "prefill" or "decode"
  attention::Shape shape;
  attention::Plan plan;
  attention::CostModel cost;
  std::vector<ObservedStep> observed;
  double seconds = 0;                       // one call
  std::vector<profiler::LayerTime> layers;  // a model step's attention per layer
};

struct Refused {
  std::string backend;
  std::string phase;
  std::string reason;
};

// "" when the backend can run `shape` on ctx's device, else why: its own refusal, or memory.
std::string refusal_of(const Context& ctx, const attention::Backend& backend,
                       const attention::Shape& shape) {
  std::string reason = backend.refusal(ctx, shape);
  if (!reason.empty()) return reason;
  const attention::CostModel cost = backend.cost_model(ctx, shape);
  const std::uint64_t needed = cost.bytes + cost.temporary_bytes;
  if (needed > ctx.memory_bytes()) {
    return "needs at least " + profiler::binary_bytes(needed) + " (inputs, output and " +
           profiler::binary_bytes(cost.temporary_bytes) + " of temporaries), more than the " +
           profiler::binary_bytes(ctx.memory_bytes()) + " this device has";
  }
  return "";
}

// The direct children of the first attention call in events [first, end), in the order they
// ran, each with its time and its device work.
std::vector<ObservedStep> observed_steps(const profiler::Trace& trace, std::size_t first,
                                         std::size_t end) {
  const std::vector<profiler::Event>& events = trace.events;
  const auto call =
      std::find_if(events.begin() + static_cast<std::ptrdiff_t>(first),
                   events.begin() + static_cast<std::ptrdiff_t>(end),
                   [](const profiler::Event& e) { return e.category == "attention"; });
  if (call == events.begin() + static_cast<std::ptrdiff_t>(end)) return {};
  std::vector<const profiler::Event*> children;
  for (std::size_t i = first; i < end; ++i) {
    if (events[i].parent == call->id) children.push_back(&events[i]);
  }
  std::sort(
      children.begin(), children.end(),
      [](const profiler::Event* a, const profiler::Event* b) { return a->start_ns < b->start_ns; });
  std::vector<ObservedStep> steps;
  for (const profiler::Event* child : children) {
    ObservedStep step{
        child->name,
        static_cast<double>(child->device_ns >= 0 ? child->device_ns : child->duration_ns()) / 1e6,
        {}};
    for (const profiler::DeviceEvent& work : trace.device) {
      if (work.is_work() && work.external_id == static_cast<std::uint64_t>(child->id) &&
          std::find(step.kernels.begin(), step.kernels.end(), work.name) == step.kernels.end()) {
        step.kernels.push_back(work.name);
      }
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

// Whether the trace ran what the plan said: the plan's step names where it names them (flash's
// path), else as many steps as the cost model counts.
bool plan_matches_trace(const Explained& e) {
  if (!e.plan.steps.empty()) {
    if (e.plan.steps.size() != e.observed.size()) return false;
    for (std::size_t i = 0; i < e.observed.size(); ++i) {
      if (e.plan.steps[i] != e.observed[i].name) return false;
    }
    return true;
  }
  return static_cast<int>(e.observed.size()) == e.cost.steps;
}

double intensity(const attention::CostModel& cost) {
  return cost.flops / static_cast<double>(cost.bytes_with_temporaries());
}

Explained explain_op(Context& ctx, const attention::Backend& backend, const attention::Shape& shape,
                     int reps) {
  Explained e{std::string(backend.name()),    "attention", shape, backend.plan(ctx, shape),
              backend.cost_model(ctx, shape), {},          0,     {}};
  AttentionRunOptions options;
  options.shape = shape;
  options.reps = reps;
  const ProfiledRun run = profile_attention_op(ctx, backend, options);
  std::vector<double> unprofiled, profiled;
  for (const StepRecord& step : run.steps) {
    (step.profiled ? profiled : unprofiled).push_back(step.wall_ms);
  }
  const StepRecord& first_profiled = *std::find_if(run.steps.begin(), run.steps.end(),
                                                   [](const StepRecord& s) { return s.profiled; });
  e.observed =
      observed_steps(run.tracer->trace(), first_profiled.first_event, first_profiled.end_event);
  e.seconds = median(unprofiled.empty() ? profiled : unprofiled) / 1e3;
  return e;
}

// The attention calls of a model's prefill of `prompt_len` tokens and of one decode step after
// it, with `backend`.
std::vector<Explained> explain_model_steps(Context& ctx, LanguageModel& model,
                                           const attention::Backend& backend,
                                           std::int64_t prompt_len) {
  model.set_attention(backend.name());
  ModelRunOptions options;
  options.prompt_len = prompt_len;
  options.gen = 1;  // one profiled decode step (and one unprofiled one after it)
  const ProfiledRun run = profile_model(ctx, model, options);
  std::vector<Explained> explained;
  for (const StepRecord& step : run.steps) {
    if (!step.profiled || step.attention_calls == 0) continue;
    const attention::Shape shape = model.attention_shape(1, step.q_len, step.kv_len);
    Explained e{std::string(backend.name()),    step.phase, shape, backend.plan(ctx, shape),
                backend.cost_model(ctx, shape), {},         0,     {}};
    e.observed = observed_steps(run.tracer->trace(), step.first_event, step.end_event);
    e.seconds = step.attention_ms / 1e3 / step.attention_calls;
    e.layers = profiler::times_by_layer(run.tracer->events(), step.first_event, step.end_event);
    explained.push_back(std::move(e));
  }
  return explained;
}

// "12.3 GFLOP/s" or "1.23 TFLOP/s".
std::string flop_rate(double flops_per_s) {
  return flops_per_s >= 1e12 ? fixed(flops_per_s / 1e12, 2) + " TFLOP/s"
                             : fixed(flops_per_s / 1e9, 2) + " GFLOP/s";
}

void print_explained(const Explained& e, const Ceilings& ceilings) {
  const double flops_per_s = e.cost.flops / e.seconds;
  const double bytes = static_cast<double>(e.cost.bytes_with_temporaries());
  const double ai = intensity(e.cost);
  const double roof = ceilings.attainable(ai);
  std::cout << "\n"
            << e.backend << (e.phase == "attention" ? "" : " (" + e.phase + ")") << ": "
            << e.plan.path << "\n"
            << "  why:      " << e.plan.why << "\n"
            << "  runs as:  " << e.plan.engine << "\n"
            << "  scores:   "
            << (e.plan.materialises_scores
                    ? "materialised: [B, Hq, Tq, Tk] = " +
                          profiler::binary_bytes(static_cast<std::size_t>(
                              e.shape.score_elements() * dtype_size(e.shape.dtype))) +
                          " per score tensor; temporaries " +
                          profiler::binary_bytes(e.cost.temporary_bytes) + " = " +
                          fixed(static_cast<double>(e.cost.temporary_bytes) /
                                    static_cast<double>(e.shape.score_elements() *
                                                        dtype_size(e.shape.dtype)),
                                2) +
                          "x that"
                    : "never materialised; temporaries " +
                          profiler::binary_bytes(e.cost.temporary_bytes))
            << "\n"
            << "  work:     " << fixed(e.cost.flops / 1e9, 3) << " GFLOP (4 D per visible "
            << "query-key pair, causal); moves at least " << profiler::binary_bytes(e.cost.bytes)
            << " (q, k, v, out) + 2 x temporaries = "
            << profiler::binary_bytes(e.cost.bytes_with_temporaries()) << "\n"
            << "  ran:      ";
  for (std::size_t i = 0; i < e.observed.size(); ++i) {
    const ObservedStep& step = e.observed[i];
    std::cout << (i ? ", " : "") << step.name << " " << fixed(step.ms, 3) << " ms";
    for (const std::string& kernel : step.kernels) std::cout << " [" << kernel << "]";
  }
  std::cout << (plan_matches_trace(e) ? "  (as planned)" : "  (NOT as planned)") << "\n"
            << "  time:     " << fixed(e.seconds * 1e3, 3)
            << " ms per call: " << flop_rate(flops_per_s) << ", "
            << fixed(bytes / e.seconds / 1e9, 2) << " GB/s\n"
            << "  roofline: " << fixed(ai, 2) << " FLOP/byte, "
            << (ai < ceilings.ridge() ? "left of" : "right of") << " the ridge at "
            << fixed(ceilings.ridge(), 2) << ": bound by "
            << (ai < ceilings.ridge() ? "memory" : "compute") << "; "
            << fixed(100.0 * flops_per_s / roof, 1) << "% of the " << flop_rate(roof)
            << " it could reach\n";
  if (!e.layers.empty()) {
    std::cout << "  attention per layer (" << e.phase << " step):\n";
    std::istringstream table(profiler::format_layer_table(e.layers));
    for (std::string line; std::getline(table, line);) std::cout << "    " << line << "\n";
  }
}

json explained_json(const Explained& e, const Ceilings& ceilings) {
  const double flops_per_s = e.cost.flops / e.seconds;
  json observed = json::array();
  for (const ObservedStep& step : e.observed) {
    observed.push_back({{"name", step.name}, {"ms", step.ms}, {"kernels", step.kernels}});
  }
  json shape = shape_json(e.shape);
  shape["dtype"] = dtype_name(e.shape.dtype);
  return {{"backend", e.backend},
          {"phase", e.phase},
          {"shape", shape},
          {"plan",
           {{"path", e.plan.path},
            {"why", e.plan.why},
            {"engine", e.plan.engine},
            {"steps", e.plan.steps},
            {"materialises_scores", e.plan.materialises_scores}}},
          {"cost",
           {{"flops", e.cost.flops},
            {"bytes", e.cost.bytes},
            {"temporary_bytes", e.cost.temporary_bytes},
            {"bytes_with_temporaries", e.cost.bytes_with_temporaries()},
            {"steps", e.cost.steps}}},
          {"observed_steps", observed},
          {"plan_matches_trace", plan_matches_trace(e)},
          {"ms_per_call", e.seconds * 1e3},
          {"flops_per_s", flops_per_s},
          {"bytes_per_s", static_cast<double>(e.cost.bytes_with_temporaries()) / e.seconds},
          {"intensity", intensity(e.cost)},
          {"bound_by", intensity(e.cost) < ceilings.ridge() ? "memory" : "compute"},
          {"roofline_share", flops_per_s / ceilings.attainable(intensity(e.cost))},
          {"layers", profiler::layer_times_json(e.layers)}};
}

int run_explain(const ExplainFlags& flags) {
  const std::unique_ptr<Context> ctx = make_context(flags.device);
  const std::vector<const attention::Backend*> backends =
      attention::resolve_backends(flags.backends);
  std::unique_ptr<LanguageModel> model;
  std::vector<std::pair<std::string, attention::Shape>> cases;  // (phase, shape) planned
  if (!flags.model.empty()) {
    model = load_model(flags.model, *ctx, parse_dtype(flags.device.dtype));
    const ModelConfig& config = model->config();
    check(
        flags.prompt_len + 2 <= config.context_length, "--prompt-len",
        "must leave 2 decode positions in the context of " + std::to_string(config.context_length));
    cases = {{"prefill", model->attention_shape(1, flags.prompt_len, flags.prompt_len)},
             {"decode", model->attention_shape(1, 1, flags.prompt_len + 1)}};
  } else {
    attention::Shape shape = {flags.shape.batch,
                              flags.shape.heads,
                              flags.shape.kv_heads,
                              flags.shape.decode ? 1 : flags.shape.seq_len,
                              flags.shape.seq_len,
                              flags.shape.head_dim,
                              parse_attention_dtype(flags.device.dtype)};
    shape.bf16_products = flags.shape.bf16_products;
    cases = {{"attention", shape}};
  }
  // The roof of the products the calls run: on the cpu the f32 GEMM's, or the bf16 tiles' where
  // the calls may round to bf16 (a bf16 model's); on a GPU the dtype's.
  const attention::Shape& first = cases.front().second;
  const DType roof_dtype = ctx->device() == Device::CUDA ? first.dtype
                           : first.bf16_products         ? DType::BF16
                                                         : DType::F32;
  const Ceilings ceilings = machine_ceilings(*ctx, roof_dtype, flags.refresh_ceilings);

  std::vector<Explained> explained;
  std::vector<Refused> refused;
  for (const attention::Backend* backend : backends) {
    bool runs = true;
    for (const auto& [phase, shape] : cases) {
      const std::string reason = refusal_of(*ctx, *backend, shape);
      if (!reason.empty()) {
        refused.push_back({std::string(backend->name()), phase, reason});
        runs = false;
      }
    }
    if (!runs) continue;
    std::cerr << "explain: " << backend->name() << "\n";
    if (model) {
      for (Explained& e : explain_model_steps(*ctx, *model, *backend, flags.prompt_len)) {
        explained.push_back(std::move(e));
      }
    } else {
      explained.push_back(explain_op(*ctx, *backend, cases.front().second, flags.reps));
    }
  }

  const std::string where = ctx->device() == Device::CUDA
                                ? ctx->describe()
                                : std::to_string(ctx->threads()) + " threads, " + cpu_model();
  std::cout << "attention " << (model ? "in " + flags.model + " " : "")
            << describe_shape(cases.front().second) << ", "
            << dtype_name(cases.front().second.dtype) << "; " << where << "\n"
            << "roofline: " << flop_rate(ceilings.flops_per_s) << " (" << ceilings.compute_probe
            << "), " << fixed(ceilings.bytes_per_s / 1e9, 1) << " GB/s (" << ceilings.memory_probe
            << "): ridge at " << fixed(ceilings.ridge(), 2) << " FLOP/byte; " << ceilings.source
            << "\n";
  for (const Explained& e : explained) print_explained(e, ceilings);
  if (!refused.empty()) {
    std::cout << "\ncannot run here:\n";
    for (const Refused& r : refused) {
      std::cout << "  " << r.backend << (r.phase == "attention" ? "" : " (" + r.phase + ")") << ": "
                << r.reason << "\n";
    }
  }

  if (!flags.json_path.empty()) {
    json calls = json::array();
    for (const Explained& e : explained) calls.push_back(explained_json(e, ceilings));
    json cannot = json::array();
    for (const Refused& r : refused) {
      cannot.push_back({{"backend", r.backend}, {"phase", r.phase}, {"reason", r.reason}});
    }
    const json report = {{"device", ctx->describe()},
                         {"threads", ctx->threads()},
                         {"cpu", cpu_model()},
                         {"model", flags.model},
                         {"ceilings",
                          {{"flops_per_s", ceilings.flops_per_s},
                           {"bytes_per_s", ceilings.bytes_per_s},
                           {"ridge", ceilings.ridge()},
                           {"compute_probe", ceilings.compute_probe},
                           {"memory_probe", ceilings.memory_probe},
                           {"source", ceilings.source}}},
                         {"calls", calls},
                         {"cannot_run", cannot}};
    write_text_file(flags.json_path, report.dump(2) + "\n");
  }
  if (!flags.roofline_path.empty()) {
    std::vector<RooflinePoint> points;
    for (const Explained& e : explained) {
      points.push_back({e.backend, e.backend, e.phase == "decode", e.cost.flops,
                        static_cast<double>(e.cost.bytes_with_temporaries()), e.seconds});
    }
    const Roofs roofs = {ceilings.flops_per_s, ceilings.bytes_per_s, ceilings.caption()};
    write_text_file(flags.roofline_path,
                    roofline_svg("attention " + describe_shape(cases.front().second), roofs, points,
                                 model ? "filled: prefill, hollow: decode" : ""));
  }
  check(!explained.empty(), "explain", "no backend could run this case (see 'cannot run here')");
  return 0;
}

}  // namespace

Subcommand add_explain(CLI::App& app) {
  auto flags = std::make_shared<ExplainFlags>();
  CLI::App* sub = app.add_subcommand(
      "explain",
      "Explain each attention backend: its plan and why, what ran, FLOP/s, bytes, intensity and "
      "its share of this machine's roofline");
  add_attention_list_flag(
      *sub, flags->backends, AttentionList::AllowingAll,
      "Backends to explain: all, or a comma list of " + attention::backend_list(), "all");
  CLI::Option* model =
      sub->add_option("-m,--model", flags->model,
                      "Explain the attention calls of this model's prefill and one decode step "
                      "(a directory or synthetic:NAME) instead of the op alone");
  sub->add_option("--prompt-len", flags->prompt_len, "--model: prompt tokens (random ids)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->needs(model);
  sub->add_option("--batch", flags->shape.batch, "The op alone: batch size")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24))
      ->excludes(model);
  CLI::Option* kv_heads = nullptr;
  add_attention_shape_flags(*sub, flags->shape, kv_heads);
  add_device_flags(*sub, flags->device);
  sub->add_option("--reps", flags->reps,
                  "The op alone: calls after the warm-up, alternately profiled and not")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000))
      ->excludes(model);
  sub->add_flag("--refresh-ceilings", flags->refresh_ceilings,
                "Measure this machine's GEMM FLOP/s and memory bandwidth again instead of reading "
                "the cache (measure/ceilings.h)");
  sub->add_option("--json", flags->json_path, "Write everything as JSON");
  sub->add_option("--roofline", flags->roofline_path,
                  "Write an SVG roofline with every explained call as a point");
  sub->callback([sub, flags, kv_heads, model] {
    finish_attention_shape(flags->shape, *kv_heads);
    refuse_shared_outputs({{"--json", flags->json_path}, {"--roofline", flags->roofline_path}});
    if (flags->shape.block_tokens != 0) {
      throw CLI::ValidationError("--paged", "explain reads contiguous calls only");
    }
    // A model's shapes are its own: the op's shape flags are refused beside it, not ignored.
    for (const char* name :
         {"--heads", "--kv-heads", "--seq-len", "--head-dim", "--decode", "--bf16-products"}) {
      if (model->count() > 0 && sub->get_option(name)->count() > 0) {
        throw CLI::ValidationError(name, "excludes --model (the model's shapes are used)");
      }
    }
  });
  return {sub, [flags] { return run_explain(*flags); }};
}

}  // namespace attnscope::cli
