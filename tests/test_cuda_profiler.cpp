// The profiler on the GPU (label gpu): CUPTI kernel records of a synthetic model's forward pass
// land inside the op scopes that launched them, none is dropped, every launch has an occupancy
// in (0, 1], the work span adds the records up; the Chrome trace has the GPU's stream tracks and
// flow arrows from launches to kernels; the CUDA-event fallback gives every scope a device time;
// CUPTI and CUDA events agree on the attention op's kernels; flash launches the kernels its
// dispatch promises (tensor cores, SIMT, split-KV), which its accuracy tests cannot tell apart.
// Every test skips loudly without a usable GPU; where CUPTI cannot start (the warning on stderr
// says why) the CUPTI checks skip loudly and the CUDA-event fallback the recorder switched to is
// checked instead.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_checks.h"
#include "models/gpt2/model.h"
#include "models/step_runner.h"
#include "ops/attention/registry.h"
#include "profiler/attach.h"
#include "profiler/chrome_trace.h"
#include "profiler/cpu_tracer.h"
#include "profiler/device_recorder.h"
#include "profiler/device_time.h"
#include "profiler/summary.h"
#include "runtime/cuda/device.h"
#include "runtime/transfer.h"

using namespace attnscope;
using testing::gpu_missing;

namespace {

// What every run timed by CUDA events alone has: no device records, and every scope's device time
// is the time between its two events.
void check_event_timing(const profiler::Trace& trace) {
  CHECK(trace.device_timing == "cuda events");
  CHECK(trace.device.empty());  // no kernel records without CUPTI
  for (const profiler::Event& e : trace.events) {
    CAPTURE(e.name);
    CHECK(e.event_timer_ns >= 0);
    CHECK(e.device_ns == e.event_timer_ns);
    CHECK(e.device_self_ns >= 0);
  }
}

// True (after checking the fallback the recorder switched to) when CUPTI could not start.
bool cupti_missing(const profiler::Trace& trace) {
  if (trace.device_timing.find("cupti") != std::string::npos) return false;
  MESSAGE("SKIPPED (CUPTI checks): CUPTI could not start here, the run fell back to "
          << trace.device_timing << "; the warning above says why; checking the fallback");
  check_event_timing(trace);
  return true;
}

// A prefill of 5 tokens and one decode step of synthetic:tiny on ctx, profiled into `tracer`
// with the device timed by a recorder of `timing` (made before the model is opened), collected.
// Returns that recorder: the tracer refers to it, so the caller keeps it as long as the tracer.
std::unique_ptr<profiler::DeviceRecorder> profile_tiny_forward(Context& ctx,
                                                               profiler::CpuTracer& tracer,
                                                               profiler::GpuTiming timing) {
  auto recorder = profiler::make_gpu_recorder(ctx, timing);
  const gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx, 0, DType::F32);
  KVCache cache = model.new_cache(ctx, 1, 8);
  tracer.set_device_recorder(recorder.get());
  {
    const profiler::Profiling on(ctx, tracer);
    const std::vector<std::int32_t> prompt = {5, 6, 7, 8, 9};
    model.forward(ctx, prompt, 1, cache);
    const std::int32_t next = 10;
    model.forward(ctx, {&next, 1}, 1, cache);
  }
  recorder->collect(tracer.trace());
  return recorder;
}

// The names of `e` and its enclosing scopes.
std::vector<std::string> scope_chain(
    const std::unordered_map<std::int64_t, const profiler::Event*>& by_id, std::int64_t id) {
  std::vector<std::string> names;
  for (auto found = by_id.find(id); found != by_id.end();
       found = by_id.find(found->second->parent)) {
    names.push_back(found->second->name);
  }
  return names;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("CUPTI kernel records land inside the op scopes that launched them") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  profiler::CpuTracer tracer;
  const auto recorder = profile_tiny_forward(ctx, tracer, profiler::GpuTiming::Cupti);
  const profiler::Trace& trace = tracer.trace();
  if (cupti_missing(trace)) return;
  CHECK(trace.device_timing == "cupti");
  CHECK(trace.dropped_records == 0);
  CHECK(contains(trace.device_name, "GPU 0"));

  std::unordered_map<std::int64_t, const profiler::Event*> by_id;
  for (const profiler::Event& e : trace.events) by_id[e.id] = &e;
  int kernels = 0, layer_norm_kernels = 0, copies_outside = 0;
  for (const profiler::DeviceEvent& d : trace.device) {
    if (!d.is_work()) continue;
    if (d.kind != profiler::DeviceEventKind::Kernel) {
      copies_outside += d.external_id == 0 ? 1 : 0;
      continue;
    }
    ++kernels;
    CAPTURE(d.name);
    REQUIRE(d.external_id != 0);  // launched inside a scope...
    REQUIRE(by_id.contains(static_cast<std::int64_t>(d.external_id)));  // ...that was recorded
    const profiler::Event& scope = *by_id.at(static_cast<std::int64_t>(d.external_id));
    // One clock for both sides: a kernel cannot start before the scope that launched it opened.
    CHECK(d.start_ns >= scope.start_ns - 100'000);
    CHECK(d.end_ns >= d.start_ns);
    CHECK(d.grid_x * d.grid_y * d.grid_z > 0);
    CHECK(d.block_x * d.block_y * d.block_z > 0);
    CHECK(d.occupancy > 0.0);
    CHECK(d.occupancy <= 1.0);
    // Kernels named after an op ran inside that op's scope.
    if (contains(d.name, "layer_norm")) {
      ++layer_norm_kernels;
      const auto chain = scope_chain(by_id, scope.id);
      CHECK(std::find(chain.begin(), chain.end(), "layer_norm") != chain.end());
    }
  }
  REQUIRE(kernels > 0);  // CUPTI started but recorded no kernel: the checks below would all fail
  if (layer_norm_kernels == 0) MESSAGE("no kernel is named after layer_norm: name check skipped");
  if (copies_outside > 0) MESSAGE(copies_outside << " copies/memsets ran outside every scope");

  // Every op scope that must launch work on the GPU has device time of its own or its children's.
  std::map<std::string, int> ops_seen;
  for (const profiler::Event& e : trace.events) {
    if (e.name == "layer_norm" || e.name == "linear" || e.name == "attention.naive" ||
        e.category == "kernel") {
      CAPTURE(e.name);
      ++ops_seen[e.name];
      CHECK(e.device_ns > 0);
    }
    CHECK(e.device_ns >= e.device_self_ns);
    CHECK(e.device_self_ns >= 0);
  }
  // One stream runs its work in order, so the work never overlaps: work_span's busy time is the
  // sum of the records' durations, inside the span from the first start to the last end.
  std::int64_t work_ns = 0, first_start = std::numeric_limits<std::int64_t>::max(), last_end = 0;
  int work_records = 0;
  for (const profiler::DeviceEvent& d : trace.device) {
    if (!d.is_work()) continue;
    ++work_records;
    work_ns += d.duration_ns();
    first_start = std::min(first_start, d.start_ns);
    last_end = std::max(last_end, d.end_ns);
  }
  const profiler::WorkSpan span = profiler::work_span(trace.device, 0, trace.device.size());
  CHECK(span.records == work_records);
  CHECK(span.busy_ns == work_ns);
  CHECK(span.span_ns == last_end - first_start);
  CHECK(span.idle_ns() >= 0);

  const int layers = 2;                                   // synthetic:tiny
  CHECK(ops_seen["layer_norm"] == 2 * (2 * layers + 1));  // two forward calls
  CHECK(ops_seen["attention.naive"] == 2 * layers);

  // The Chrome trace: a GPU process with stream tracks, its kernels on them, flow arrows.
  std::ostringstream text;
  profiler::write_chrome_trace(trace, "test", text);
  const nlohmann::json json = nlohmann::json::parse(text.str());
  int gpu_pid = -1;
  for (const nlohmann::json& e : json["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "GPU 0") {
      gpu_pid = e["pid"];
    }
  }
  REQUIRE(gpu_pid > 0);
  int stream_tracks = 0, on_streams = 0, device_counters = 0;
  std::set<std::uint64_t> starts, finishes;
  for (const nlohmann::json& e : json["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == gpu_pid &&
        e["args"]["name"].get<std::string>().starts_with("stream ")) {
      ++stream_tracks;
    }
    if (e["ph"] == "X" && e["pid"] == gpu_pid && e["cat"] == "kernel") ++on_streams;
    if (e["ph"] == "s") starts.insert(e["id"].get<std::uint64_t>());
    if (e["ph"] == "f") finishes.insert(e["id"].get<std::uint64_t>());
    if (e["ph"] == "C" && e["args"].contains("cuda_bytes")) ++device_counters;
  }
  CHECK(stream_tracks >= 1);
  CHECK(on_streams == kernels);
  CHECK(!finishes.empty());
  for (std::uint64_t id : finishes) CHECK(starts.contains(id));
  CHECK(device_counters > 0);

  const std::string table = profiler::format_kernel_table(profiler::summarize_kernels(trace), 50);
  CHECK(contains(table, "occupancy"));
}

TEST_CASE("decode steps replayed as CUDA graphs keep their kernels in their ops and layers") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  const gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx, 0, DType::F32);
  // The same decode step, once eager and once replayed from a graph, each profiled: every op
  // scope must own the same kernels either way (profiler/graph_replay.h).
  struct Kernels {
    std::map<std::string, std::multiset<std::string>> by_scope;  // "layer 1/linear" -> kernels
    std::size_t attributed = 0;
    bool cupti = false;      // false: CUPTI could not start, nothing was run
    int graph_work = 0;      // work records a graph ran
    std::int64_t nodes = 0;  // of the graph the runner captured for the profiled step
    profiler::WorkSpan span;
  };
  auto kernels_per_scope = [&](bool graphs) {
    Kernels kernels;
    profiler::CpuTracer tracer;
    auto recorder = profiler::make_gpu_recorder(ctx, profiler::GpuTiming::Cupti);
    // Without CUPTI the recorder times scopes with CUDA events, which a capture cannot record
    // (profile refuses --cuda-graphs then): nothing to run.
    if (recorder->uses_event_timers()) return kernels;
    kernels.cupti = true;
    tracer.set_device_recorder(recorder.get());
    KVCache cache = model.new_cache(ctx, 1, 8);
    StepRunner runner(graphs, /*under_profiler=*/true);
    const std::vector<std::int32_t> prompt = {5, 6, 7, 8, 9};
    model.forward(ctx, prompt, 1, cache, runner);
    const std::int32_t first = 10, second = 11;
    model.forward(ctx, {&first, 1}, 1, cache, runner);  // eager: loads every kernel
    {
      const profiler::Profiling on(ctx, tracer);
      model.forward(ctx, {&second, 1}, 1, cache, runner);
    }
    recorder->collect(tracer.trace());
    std::unordered_map<std::int64_t, const profiler::Event*> by_id;
    for (const profiler::Event& e : tracer.trace().events) by_id[e.id] = &e;
    for (const profiler::DeviceEvent& d : tracer.trace().device) {
      if (d.kind != profiler::DeviceEventKind::Kernel) continue;
      std::string where;
      for (auto up = by_id.find(static_cast<std::int64_t>(d.external_id)); up != by_id.end();
           up = by_id.find(up->second->parent)) {
        std::string scope = up->second->name;
        if (up->second->index >= 0) scope.append(" ").append(std::to_string(up->second->index));
        where = scope.append("/").append(where);
      }
      kernels.by_scope[where].insert(d.name);
    }
    kernels.attributed = tracer.trace().graph_work_attributed;
    for (const profiler::DeviceEvent& d : tracer.trace().device) {
      kernels.graph_work += d.is_work() && d.graph_id != 0 ? 1 : 0;
    }
    kernels.span = profiler::work_span(tracer.trace().device, 0, tracer.trace().device.size());
    kernels.nodes = runner.graph_counts().nodes;
    return kernels;
  };
  const Kernels eager = kernels_per_scope(false);
  if (!eager.cupti) {
    MESSAGE("SKIPPED (CUPTI checks): CUPTI could not start here");
    return;
  }
  REQUIRE(!eager.by_scope.empty());  // CUPTI started: no kernel record is a failure
  const Kernels replayed = kernels_per_scope(true);
  REQUIRE(replayed.cupti);
  CHECK(eager.attributed == 0);
  CHECK(replayed.attributed > 0);
  CHECK(replayed.by_scope == eager.by_scope);
  // The replayed step's work span is its graph's nodes alone: not the copies around the launch.
  CHECK(eager.graph_work == 0);
  REQUIRE(replayed.graph_work > 0);
  CHECK(replayed.span.records == replayed.graph_work);
  CHECK(replayed.graph_work == replayed.nodes);     // each node of the graph ran once
  CHECK(eager.span.records > replayed.graph_work);  // the eager step's copies count there
  CHECK(eager.by_scope.contains("forward/layer 1/attention_block/attention.naive/naive.softmax/"));
}

TEST_CASE("the CUDA-event fallback gives every scope a device time") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  profiler::CpuTracer tracer;
  const auto recorder = profile_tiny_forward(ctx, tracer, profiler::GpuTiming::CudaEvents);
  const profiler::Trace& trace = tracer.trace();
  check_event_timing(trace);
  int kernel_scopes = 0;
  std::map<std::int64_t, std::int64_t> children_ns;
  std::map<std::int64_t, int> children;
  for (const profiler::Event& e : trace.events) {
    CAPTURE(e.name);
    if (e.category == "kernel") {
      ++kernel_scopes;
      CHECK(e.device_ns > 0);
    }
    if (e.parent >= 0) {
      children_ns[e.parent] += e.device_ns;
      ++children[e.parent];
    }
  }
  CHECK(kernel_scopes > 0);
  // A parent's events bracket its children's on the stream; each time read is good to about
  // half a microsecond.
  for (const profiler::Event& e : trace.events) {
    CAPTURE(e.name);
    CHECK(e.device_ns + 1000 * (children[e.id] + 1) >= children_ns[e.id]);
  }
}

TEST_CASE("CUPTI and CUDA events agree on the attention op's kernels") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  const ops::attention::Backend& backend = ops::attention::find_backend("fused");
  const Shape dims = {1, 4, 256, 64};
  auto input = [&](float scale) {
    Tensor host = Tensor::empty(dims, DType::F32, ctx.host_allocator());
    for (std::int64_t i = 0; i < host.numel(); ++i) {
      host.data<float>()[i] = scale * static_cast<float>(i % 17 - 8);
    }
    return to_device(ctx, host);
  };
  ops::attention::Call call;
  call.q = input(0.01f);
  call.k = input(0.02f);
  call.v = input(0.03f);
  call.out = Tensor::empty(dims, DType::F32, ctx.allocator());
  call.kv_len = dims[2];
  call.scale = 0.125f;
  backend.attend(ctx, call);  // warm-up
  ctx.synchronize();

  profiler::CpuTracer tracer;
  const auto recorder = profiler::make_gpu_recorder(ctx, profiler::GpuTiming::Both);
  tracer.set_device_recorder(recorder.get());
  {
    const profiler::Profiling on(ctx, tracer);
    for (int i = 0; i < 3; ++i) backend.attend(ctx, call);
  }
  recorder->collect(tracer.trace());
  if (cupti_missing(tracer.trace())) return;
  CHECK(tracer.trace().device_timing == "cupti + cuda events");
  const auto rows = profiler::fidelity_rows(tracer.events());
  REQUIRE(!rows.empty());
  for (const profiler::FidelityRow& row : rows) {
    CAPTURE(row.name);
    CHECK(row.calls == 3);
    // The events bracket the kernels on the stream: never (beyond their resolution) shorter.
    CHECK(row.event_ns + 2000 * row.calls >= row.cupti_ns);
  }
}

TEST_CASE("flash launches the kernel its dispatch promises for each kind of call") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  const ops::attention::Backend& flash = ops::attention::find_backend("flash");
  // The accuracy tests (test_cuda_flash) pass whichever tiled kernel runs; only the kernel names
  // tell that 16-bit calls at head dims 64 and 128 take the tensor cores.
  struct KernelCase {
    DType dtype;
    std::int64_t q_len, kv_len, head_dim;
    std::vector<std::string> kernels;  // each a part of one launched kernel's name, in order
  };
  const std::vector<KernelCase> cases = {
      {DType::BF16, 70, 70, 64, {"flash_forward_mma_kernel"}},
      {DType::F16, 70, 70, 128, {"flash_forward_mma_kernel"}},
      {DType::F32, 70, 70, 64, {"flash_forward_simt_kernel"}},
      {DType::BF16, 70, 70, 32, {"flash_forward_simt_kernel"}},
      {DType::BF16, 1, 300, 64, {"flash_decode_split_kernel", "flash_decode_combine_kernel"}},
  };
  for (const KernelCase& c : cases) {
    CAPTURE(dtype_name(c.dtype));
    CAPTURE(c.q_len);
    CAPTURE(c.head_dim);
    ops::attention::Call call;
    call.q = zeros_on(ctx, {1, 2, c.q_len, c.head_dim}, c.dtype);
    call.k = zeros_on(ctx, {1, 2, c.kv_len, c.head_dim}, c.dtype);
    call.v = zeros_on(ctx, {1, 2, c.kv_len, c.head_dim}, c.dtype);
    call.out = zeros_on(ctx, {1, 2, c.q_len, c.head_dim}, c.dtype);
    call.kv_len = c.kv_len;
    call.scale = 0.125f;
    ctx.synchronize();
    profiler::CpuTracer tracer;
    const auto recorder = profiler::make_gpu_recorder(ctx, profiler::GpuTiming::Cupti);
    tracer.set_device_recorder(recorder.get());
    {
      const profiler::Profiling on(ctx, tracer);
      flash.attend(ctx, call);
    }
    recorder->collect(tracer.trace());
    if (cupti_missing(tracer.trace())) return;
    std::vector<const profiler::DeviceEvent*> kernels;
    for (const profiler::DeviceEvent& d : tracer.trace().device) {
      if (d.kind == profiler::DeviceEventKind::Kernel) kernels.push_back(&d);
    }
    std::sort(kernels.begin(), kernels.end(),
              [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
    REQUIRE(kernels.size() == c.kernels.size());
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      CAPTURE(kernels[i]->name);
      CHECK(contains(kernels[i]->name, c.kernels[i]));
    }
  }
}
