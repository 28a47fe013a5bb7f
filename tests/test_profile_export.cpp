// The profiler's outputs: the Chrome trace is valid Trace Event Format with properly nested,
// monotonic scopes per thread; summary rows add up to their events; the memory counter's peak is
// the allocator's; every backend's attention calls run the steps their cost model predicts.
// The GPU side's pure parts run here too, without a GPU: the occupancy formula (against hand
// computations for an H200 and, in CUDA builds, the toolkit's cuda_occupancy.h), device time per
// scope from hand-made kernel records, and the export of GPU tracks and flow arrows.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/gpt2/model.h"
#include "profiler/attach.h"
#include "profiler/chrome_trace.h"
#include "profiler/cpu_tracer.h"
#include "profiler/device_time.h"
#include "profiler/graph_replay.h"
#include "profiler/occupancy.h"
#include "profiler/summary.h"
#include "profiler/summary_json.h"
#include "runtime/error.h"

#if ATTNSCOPE_HAS_CUDA
#include <cuda_occupancy.h>
#include <cuda_runtime.h>
#endif
#ifdef ATTNSCOPE_WITH_CUPTI  // the toolkit has CUPTI (tests/CMakeLists.txt)
#include "profiler/cupti_tracer.h"
#endif

using namespace attnscope;

namespace {

// Prefill of 5 tokens then one decode step of synthetic:tiny with `backend`, profiled.
void profile_tiny(Context& ctx, profiler::CpuTracer& tracer, const std::string& backend) {
  gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx);
  model.set_attention(backend);
  KVCache cache = model.new_cache(ctx, 1, 8);
  ctx.allocator().reset_peak();
  const profiler::Profiling on(ctx, tracer);
  const std::vector<std::int32_t> prompt = {5, 6, 7, 8, 9};
  model.forward(ctx, prompt, 1, cache);
  const std::int32_t next = 10;
  model.forward(ctx, {&next, 1}, 1, cache);
}

}  // namespace

TEST_CASE("the Chrome trace is valid Trace Event Format with nested, monotonic scopes") {
  Context ctx(2);
  profiler::CpuTracer tracer;
  profile_tiny(ctx, tracer, "naive");
  std::ostringstream text;
  profiler::write_chrome_trace(tracer.trace(), "test", text);
  const nlohmann::json trace = nlohmann::json::parse(text.str());
  REQUIRE(trace["traceEvents"].is_array());

  std::map<int, std::vector<std::pair<double, double>>> open_by_thread;  // (start, end) stacks
  std::map<int, double> last_start;
  int complete = 0, counters = 0, thread_names = 0, process_names = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    const std::string phase = e.at("ph");
    CHECK(e.at("pid").is_number_integer());
    if (phase == "M") {
      (e.at("name") == "process_name" ? process_names : thread_names) += 1;
      CHECK(e.at("args").at("name").is_string());
    } else if (phase == "C") {
      ++counters;
      CHECK(e.at("args").at("cpu_bytes").is_number_unsigned());
    } else {
      REQUIRE(phase == "X");
      ++complete;
      const int tid = e.at("tid");
      const double start = e.at("ts"), end = start + e.at("dur").get<double>();
      CHECK(e.at("dur").get<double>() >= 0);
      CHECK(e.at("name").is_string());
      CHECK(e.at("cat").is_string());
      CHECK(start >= last_start[tid]);  // monotonic per thread
      last_start[tid] = start;
      auto& stack = open_by_thread[tid];
      while (!stack.empty() && stack.back().second <= start) stack.pop_back();
      if (!stack.empty()) CHECK(end <= stack.back().second);  // inside its parent
      CHECK(e.at("args").at("depth") == static_cast<int>(stack.size()));
      stack.emplace_back(start, end);
    }
  }
  CHECK(complete == static_cast<int>(tracer.events().size()));
  CHECK(counters == static_cast<int>(tracer.memory().size()));
  CHECK(counters > 0);
  CHECK(process_names == 1);
  CHECK(thread_names == 1);
}

TEST_CASE("summary totals equal the sum of their events, and self + children = total") {
  Context ctx(1);
  profiler::CpuTracer tracer;
  profile_tiny(ctx, tracer, "fused");
  const auto& events = tracer.events();
  const auto rows = profiler::summarize(events, profiler::SortKey::Total);
  std::int64_t self_sum = 0;
  for (const profiler::SummaryRow& row : rows) {
    std::int64_t total = 0, children = 0, calls = 0;
    for (const profiler::Event& e : events) {
      if (e.name != row.name) continue;
      ++calls;
      total += e.duration_ns();
      for (const profiler::Event& child : events) {
        if (child.parent == e.id) children += child.duration_ns();
      }
    }
    CAPTURE(row.name);
    CHECK(row.calls == calls);
    CHECK(row.total_ns == total);
    CHECK(row.self_ns + children == total);
    self_sum += row.self_ns;
  }
  CHECK(self_sum == profiler::wall_ns(events));
  for (std::size_t i = 1; i < rows.size(); ++i) CHECK(rows[i - 1].total_ns >= rows[i].total_ns);
  const auto by_name = profiler::summarize(events, profiler::SortKey::Name);
  for (std::size_t i = 1; i < by_name.size(); ++i) CHECK(by_name[i - 1].name < by_name[i].name);
  CHECK(profiler::parse_sort_key("calls") == profiler::SortKey::Calls);
  CHECK_THROWS_AS(profiler::parse_sort_key("speed"), Error);

  const nlohmann::json json = profiler::summary_json(rows, profiler::wall_ns(events), 0);
  CHECK(json["rows"].size() == rows.size());
  CHECK(json["rows"][0]["total_ns"] == rows[0].total_ns);
  const std::string table = profiler::format_summary_table(rows, profiler::wall_ns(events));
  CHECK(table.find("attention.fused") != std::string::npos);
}

TEST_CASE("memory counter events exist and their peak is the allocator's peak") {
  Context ctx(2);
  profiler::CpuTracer tracer;
  profile_tiny(ctx, tracer, "naive");
  REQUIRE(!tracer.memory().empty());
  std::size_t highest = 0;
  std::int64_t last = 0;
  for (const profiler::MemorySample& sample : tracer.memory()) {
    highest = std::max(highest, sample.current_bytes);
    CHECK(sample.time_ns >= last);
    last = sample.time_ns;
  }
  CHECK(highest == ctx.allocator().peak_bytes());
  CHECK(ctx.profiler() == nullptr);  // Profiling switched everything off again
  CHECK(profiler::binary_bytes(512) == "512 B");
  CHECK(profiler::binary_bytes(3 * 1024 * 1024) == "3.00 MiB");
}

TEST_CASE("every backend runs the steps and temporaries its cost model predicts") {
  for (const std::string& backend : ops::attention::backend_names()) {
    CAPTURE(backend);
    Context ctx(2);
    profiler::CpuTracer tracer;
    gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx);
    model.set_attention(backend);
    const ModelConfig& config = model.config();
    KVCache cache = model.new_cache(ctx, 1, 8);
    const std::vector<std::int32_t> prompt = {1, 2, 3, 4};
    {
      const profiler::Profiling on(ctx, tracer);
      model.forward(ctx, prompt, 1, cache);
    }
    ops::attention::Call call;
    call.q = Tensor::empty({1, config.n_heads, 4, config.head_dim}, DType::F32, ctx.allocator());
    call.k = cache.keys(0);
    call.v = cache.values(0);
    call.out = Tensor::empty(call.q.shape(), DType::F32, ctx.allocator());
    call.kv_len = 4;
    const ops::attention::CostModel expected =
        model.attention().cost_model(ctx, ops::attention::shape_of(call));
    int calls = 0;
    for (const profiler::Event& e : tracer.events()) {
      if (e.category != "attention") continue;
      ++calls;
      const auto steps = std::count_if(tracer.events().begin(), tracer.events().end(),
                                       [&](const profiler::Event& c) { return c.parent == e.id; });
      CHECK(steps == expected.steps);
      CHECK(e.peak_bytes == expected.temporary_bytes);
    }
    CHECK(calls == config.n_layers);
  }
}

namespace {

#if ATTNSCOPE_HAS_CUDA
using DeviceProp = cudaDeviceProp;
#else
// The fields of cudaDeviceProp that sm_limits_of reads, for builds without the CUDA headers.
struct DeviceProp {
  int major, minor, warpSize, maxThreadsPerMultiProcessor, maxThreadsPerBlock,
      maxBlocksPerMultiProcessor, regsPerMultiprocessor, regsPerBlock, multiProcessorCount;
  std::size_t sharedMemPerMultiprocessor, sharedMemPerBlock, sharedMemPerBlockOptin,
      reservedSharedMemPerBlock;
};
#endif

// An H200 (sm_90) as cudaGetDeviceProperties describes it, filled in by hand.
DeviceProp h200_properties() {
  DeviceProp prop{};
  prop.major = 9;
  prop.minor = 0;
  prop.warpSize = 32;
  prop.maxThreadsPerMultiProcessor = 2048;
  prop.maxThreadsPerBlock = 1024;
  prop.maxBlocksPerMultiProcessor = 32;
  prop.regsPerMultiprocessor = 65536;
  prop.regsPerBlock = 65536;
  prop.multiProcessorCount = 132;
  prop.sharedMemPerMultiprocessor = 228 * 1024;
  prop.sharedMemPerBlock = 48 * 1024;
  prop.sharedMemPerBlockOptin = 227 * 1024;
  prop.reservedSharedMemPerBlock = 1024;
  return prop;
}

profiler::Occupancy occupancy_on_h200(int threads, int registers, std::size_t shared) {
  return profiler::estimate_occupancy(profiler::sm_limits_of(h200_properties()),
                                      {threads, registers, shared});
}

}  // namespace

TEST_CASE("theoretical occupancy on an H200, computed by hand") {
  // 256 threads x 32 registers: 8 warps of 1024 registers; 16 warps per sub-partition, 64 per SM
  // -> 8 blocks, all 64 warp slots.
  profiler::Occupancy o = occupancy_on_h200(256, 32, 0);
  CHECK(o.blocks_per_sm == 8);
  CHECK(o.max_warps_per_sm == 64);
  CHECK(o.fraction == doctest::Approx(1.0));
  // 128 threads x 128 registers: 4096 per warp, 4 warps per sub-partition -> 16 warps, 4 blocks.
  o = occupancy_on_h200(128, 128, 0);
  CHECK(o.blocks_per_sm == 4);
  CHECK(o.fraction == doctest::Approx(0.25));
  CHECK(o.limit == "registers");
  // 72 registers: 72 x 32 = 2304 per warp (a multiple of 256), floor(16384 / 2304) = 7 warps per
  // sub-partition -> 28 warps -> 3 blocks of 8 warps = 24 warps.
  o = occupancy_on_h200(256, 72, 0);
  CHECK(o.blocks_per_sm == 3);
  CHECK(o.fraction == doctest::Approx(24.0 / 64.0));
  // 33 registers round up to 1280 per warp: floor(16384 / 1280) = 12 -> 48 warps -> 6 blocks.
  o = occupancy_on_h200(256, 33, 0);
  CHECK(o.blocks_per_sm == 6);
  // 48 KiB of shared memory + 1 KiB reserved per block: floor(228 / 49) = 4 blocks, 32 warps.
  o = occupancy_on_h200(256, 32, 48 * 1024);
  CHECK(o.blocks_per_sm == 4);
  CHECK(o.fraction == doctest::Approx(0.5));
  CHECK(o.limit == "shared memory");
  // One-warp blocks stop at 32 blocks per SM: half the warp slots.
  o = occupancy_on_h200(32, 16, 0);
  CHECK(o.blocks_per_sm == 32);
  CHECK(o.fraction == doctest::Approx(0.5));
  CHECK(o.limit == "blocks");
  // 1024 threads x 64 registers fill the register file with one block.
  o = occupancy_on_h200(1024, 64, 0);
  CHECK(o.blocks_per_sm == 1);
  CHECK(o.fraction == doctest::Approx(0.5));
  // Launches that cannot run: too many registers, threads or shared memory for one block.
  CHECK(occupancy_on_h200(1024, 128, 0).blocks_per_sm == 0);
  CHECK(occupancy_on_h200(2048, 16, 0).limit == "does not fit");
  CHECK(occupancy_on_h200(128, 16, 228 * 1024).blocks_per_sm == 0);
}

#if ATTNSCOPE_HAS_CUDA
TEST_CASE("the occupancy formula agrees with the toolkit's cuda_occupancy.h") {
  const cudaDeviceProp prop = h200_properties();
  const cudaOccDeviceProp occupancy_prop(prop);
  const cudaOccDeviceState state;
  for (int threads : {32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 896, 992, 1024}) {
    for (int registers : {0, 16, 24, 32, 33, 40, 64, 72, 80, 96, 128, 168, 200, 255}) {
      for (std::size_t shared : {std::size_t{0}, std::size_t{1000}, std::size_t{4096},
                                 std::size_t{16384}, std::size_t{49152}, std::size_t{102400},
                                 std::size_t{204800}, std::size_t{227 * 1024}}) {
        cudaOccFuncAttributes attributes;
        attributes.maxThreadsPerBlock = 1024;
        attributes.numRegs = registers;
        attributes.sharedSizeBytes = 0;
        attributes.partitionedGCConfig = PARTITIONED_GC_OFF;
        attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        attributes.maxDynamicSharedSizeBytes = prop.sharedMemPerBlockOptin;
        attributes.numBlockBarriers = 1;
        attributes.virtualResourceCount = 0;
        cudaOccResult result{};
        REQUIRE(cudaOccMaxActiveBlocksPerMultiprocessor(&result, &occupancy_prop, &attributes,
                                                        &state, threads,
                                                        shared) == CUDA_OCC_SUCCESS);
        CAPTURE(threads);
        CAPTURE(registers);
        CAPTURE(shared);
        CHECK(occupancy_on_h200(threads, registers, shared).blocks_per_sm ==
              result.activeBlocksPerMultiprocessor);
      }
    }
  }
}

#endif

#ifdef ATTNSCOPE_WITH_CUPTI
// The tracer's bookkeeping needs no device until start().
TEST_CASE("a CUPTI tracer that was never started is empty") {
  profiler::CuptiTracer tracer;
  CHECK_FALSE(tracer.active());
  CHECK(tracer.take_events().empty());
  CHECK(tracer.dropped_records() == 0);
  CHECK(tracer.unparsed_records() == 0);
}
#endif

namespace {

// forward (id 12) > layer_norm (id 10), linear (id 11), as a CpuTracer would have closed them,
// with two kernels in layer_norm, one in linear, a copy launched by forward itself and a kernel
// launched outside every scope (external id 0). Times in ns.
profiler::Trace hand_made_gpu_trace() {
  profiler::Trace trace;
  auto scope = [](std::string name, std::int64_t id, std::int64_t parent, int depth,
                  std::int64_t start, std::int64_t end) {
    profiler::Event e;
    e.name = std::move(name);
    e.category = "op";
    e.thread = 1;
    e.id = id;
    e.parent = parent;
    e.depth = depth;
    e.start_ns = start;
    e.end_ns = end;
    return e;
  };
  trace.events = {scope("layer_norm", 10, 12, 1, 1000, 3000),
                  scope("linear", 11, 12, 1, 3000, 6000), scope("forward", 12, -1, 0, 0, 10000)};
  trace.events[2].category = "step";
  trace.events[2].children_ns = 5000;
  auto record = [](profiler::DeviceEventKind kind, std::string name, std::uint32_t correlation,
                   std::uint64_t scope_id, std::int64_t start, std::int64_t end) {
    profiler::DeviceEvent d;
    d.kind = kind;
    d.name = std::move(name);
    d.device = 0;
    d.stream = 13;
    d.thread = 4242;
    d.correlation_id = correlation;
    d.external_id = scope_id;
    d.start_ns = start;
    d.end_ns = end;
    if (kind == profiler::DeviceEventKind::Kernel) {
      d.grid_x = 64, d.grid_y = 1, d.grid_z = 1;
      d.block_x = 256, d.block_y = 1, d.block_z = 1;
      d.registers_per_thread = 32;
      d.occupancy = 1.0;
      d.occupancy_limit = "warps";
    }
    return d;
  };
  using Kind = profiler::DeviceEventKind;
  trace.device = {
      record(Kind::RuntimeApi, "cudaLaunchKernel", 7, 10, 1100, 1150),
      record(Kind::Kernel, "layer_norm_kernel", 7, 10, 1200, 1700),
      record(Kind::RuntimeApi, "cudaLaunchKernel", 8, 10, 1800, 1850),
      record(Kind::Kernel, "layer_norm_kernel", 8, 10, 1900, 2200),
      record(Kind::DriverApi, "cuLaunchKernel", 9, 11, 3100, 3150),
      record(Kind::Kernel, "gemm_kernel", 9, 11, 3200, 5200),
      record(Kind::Memcpy, "Memcpy HtoD", 10, 12, 500, 600),
      record(Kind::Kernel, "orphan_kernel", 11, 0, 9000, 9100),
  };
  return trace;
}

}  // namespace

TEST_CASE("device time per scope: kernels count toward their innermost scope, and add up") {
  profiler::Trace trace = hand_made_gpu_trace();
  const std::size_t outside =
      profiler::attribute_device_time(trace, 0, 0, profiler::DeviceTimeSource::Activity);
  CHECK(outside == 1);  // orphan_kernel
  const auto& e = trace.events;
  CHECK(e[0].device_self_ns == 500 + 300);
  CHECK(e[0].device_ns == 800);
  CHECK(e[0].kernels == 2);
  CHECK(e[1].device_ns == 2000);
  CHECK(e[2].device_self_ns == 100);  // the copy launched by forward itself
  CHECK(e[2].device_ns == 100 + 800 + 2000);
  CHECK(e[2].kernels == 1);
  CHECK(profiler::device_wall_ns(e) == 2900);

  const auto rows = profiler::summarize(e, profiler::SortKey::Device);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].name == "forward");
  CHECK(rows[1].name == "linear");
  CHECK(rows[1].device_total_ns == 2000);
  const auto by_self = profiler::summarize(e, profiler::SortKey::DeviceSelf);
  CHECK(by_self[0].name == "linear");
  CHECK(profiler::parse_sort_key("device-self") == profiler::SortKey::DeviceSelf);
  const std::string table = profiler::format_summary_table(rows, profiler::wall_ns(e), 2900);
  CHECK(table.find("dev total ms") != std::string::npos);
  const nlohmann::json json = profiler::summary_json(rows, profiler::wall_ns(e), 0, 2900,
                                                     profiler::summarize_kernels(trace));
  CHECK(json["device_wall_ns"] == 2900);
  CHECK(json["rows"][1]["device_total_ns"] == 2000);
  const auto kernels = profiler::summarize_kernels(trace);
  REQUIRE(!kernels.empty());
  CHECK(kernels[0].name == "gemm_kernel");
  CHECK(kernels[0].scope == "linear");
  CHECK(json["kernels"].size() == kernels.size());

  // The CUDA-event fallback: device time is the time between the events, self what the children
  // leave.
  profiler::Trace timed = hand_made_gpu_trace();
  timed.device.clear();
  timed.events[0].event_timer_ns = 900;
  timed.events[1].event_timer_ns = 2100;
  timed.events[2].event_timer_ns = 3500;
  profiler::attribute_device_time(timed, 0, 0, profiler::DeviceTimeSource::EventTimers);
  CHECK(timed.events[0].device_ns == 900);
  CHECK(timed.events[0].device_self_ns == 900);
  CHECK(timed.events[2].device_ns == 3500);
  CHECK(timed.events[2].device_self_ns == 3500 - 900 - 2100);
}

TEST_CASE(
    "work_span: the GPU's busy time is the union of its work (a graph's alone when it ran one), "
    "idle the rest of the span") {
  const profiler::Trace trace = hand_made_gpu_trace();
  // Every record: the copy (500-600), two layer norms (1200-1700, 1900-2200), the GEMM
  // (3200-5200) and the orphan (9000-9100); the API calls are skipped.
  const profiler::WorkSpan all = profiler::work_span(trace.device, 0, trace.device.size());
  CHECK(all.records == 5);
  CHECK(all.span_ns == 9100 - 500);
  CHECK(all.busy_ns == 100 + 500 + 300 + 2000 + 100);
  CHECK(all.idle_ns() == 8600 - 3000);
  // A stretch of the records: the two layer norms.
  const profiler::WorkSpan norms = profiler::work_span(trace.device, 0, 4);
  CHECK(norms.records == 2);
  CHECK(norms.span_ns == 1000);
  CHECK(norms.busy_ns == 800);
  // Overlapping work (two streams) counts once, in any order: [0, 100) and [50, 150) cover 150,
  // [20, 40) lies inside them, [300, 400) adds 100.
  auto work = [](std::int64_t start, std::int64_t end) {
    profiler::DeviceEvent d;
    d.kind = profiler::DeviceEventKind::Kernel;
    d.start_ns = start;
    d.end_ns = end;
    return d;
  };
  const std::vector<profiler::DeviceEvent> overlapping = {work(300, 400), work(50, 150),
                                                          work(0, 100), work(20, 40)};
  const profiler::WorkSpan merged = profiler::work_span(overlapping, 0, overlapping.size());
  CHECK(merged.records == 4);
  CHECK(merged.span_ns == 400);
  CHECK(merged.busy_ns == 250);
  CHECK(merged.idle_ns() == 150);
  // A zero-length record and one whose end precedes its start add no busy time but count.
  const std::vector<profiler::DeviceEvent> odd = {work(0, 100), work(150, 150), work(300, 250)};
  const profiler::WorkSpan odd_span = profiler::work_span(odd, 0, odd.size());
  CHECK(odd_span.records == 3);
  CHECK(odd_span.busy_ns == 100);
  CHECK(odd_span.span_ns == 250);  // max(end) - min(start)
  // A step launched as a CUDA graph: only the graph's records count, so the copy before the
  // launch and the host's capture in the gap after it stay out.
  std::vector<profiler::DeviceEvent> graph_step = {work(0, 10), work(5000, 5100), work(5300, 5400),
                                                   work(6000, 6010)};
  graph_step[0].kind = graph_step[3].kind = profiler::DeviceEventKind::Memcpy;
  graph_step[1].graph_id = graph_step[2].graph_id = 7;
  const profiler::WorkSpan replayed = profiler::work_span(graph_step, 0, graph_step.size());
  CHECK(replayed.records == 2);
  CHECK(replayed.span_ns == 400);
  CHECK(replayed.busy_ns == 200);
  // No work: all zero.
  const profiler::WorkSpan none = profiler::work_span(trace.device, 0, 1);
  CHECK(none.records == 0);
  CHECK(none.span_ns == 0);
  CHECK(none.busy_ns == 0);
}

TEST_CASE(
    "the fidelity table compares CUPTI and event times of scopes whose kernels are their own") {
  std::vector<profiler::Event> events(3);
  events[0].name = "flash.tiled";  // one kernel, timed both ways
  events[0].kernels = 1;
  events[0].device_ns = events[0].device_self_ns = 1000;
  events[0].event_timer_ns = 1100;
  events[1] = events[0];
  events[2].name = "attention.flash";  // its kernel is in a child: not comparable
  events[2].device_ns = 1000;
  events[2].device_self_ns = 0;
  events[2].event_timer_ns = 1500;
  const auto rows = profiler::fidelity_rows(events);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].calls == 2);
  CHECK(rows[0].cupti_ns == 2000);
  CHECK(rows[0].event_ns == 2200);
  CHECK(rows[0].ratio() == doctest::Approx(1.1));
  CHECK(profiler::format_fidelity_table(rows).find("flash.tiled") != std::string::npos);
}

TEST_CASE("GPU activity is exported on stream tracks, with flow arrows from launches to kernels") {
  profiler::Trace trace = hand_made_gpu_trace();
  trace.device_timing = "cupti";
  trace.device_name = "GPU 0: NVIDIA H200";
  trace.notes = {"CUDA graphs are off while profiling"};
  trace.memory = {{0, Device::CUDA, 1 << 20}, {5000, Device::CUDA, 3 << 20}};
  std::ostringstream text;
  profiler::write_chrome_trace(trace, "test", text);
  const nlohmann::json json = nlohmann::json::parse(text.str());
  CHECK(json["otherData"]["device_timing"] == "cupti");
  CHECK(json["otherData"]["notes"][0] == "CUDA graphs are off while profiling");

  int gpu_pid = -1;
  std::map<std::pair<int, int>, std::string> track_names;
  for (const nlohmann::json& e : json["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "GPU 0") {
      gpu_pid = e["pid"];
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      track_names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
    }
  }
  REQUIRE(gpu_pid > 0);
  CHECK(track_names[{gpu_pid, 13}] == "stream 13");

  std::map<std::uint32_t, nlohmann::json> starts, finishes;
  int kernels_on_stream = 0, counters = 0;
  for (const nlohmann::json& e : json["traceEvents"]) {
    if (e["ph"] == "s") starts[e["id"].get<std::uint32_t>()] = e;
    if (e["ph"] == "f") finishes[e["id"].get<std::uint32_t>()] = e;
    if (e["ph"] == "C") {
      ++counters;
      CHECK(e["pid"] == gpu_pid);
      CHECK(e["args"].contains("cuda_bytes"));
    }
    if (e["ph"] == "X" && e["pid"] == gpu_pid) {
      ++kernels_on_stream;
      CHECK(e["tid"] == 13);
      if (e["name"] == "gemm_kernel") {
        CHECK(e["args"]["scope"] == "linear");
        CHECK(e["args"]["grid"] == nlohmann::json::array({64, 1, 1}));
        CHECK(e["args"]["occupancy"] == 1.0);
      }
    }
    if (e["ph"] == "X" && e["name"] == "cudaLaunchKernel") {
      CHECK(e["pid"] == 1);
      CHECK(track_names[{1, e["tid"].get<int>()}].starts_with("CUDA API"));
    }
  }
  CHECK(kernels_on_stream == 5);  // 4 kernels and the copy
  CHECK(counters == 2);
  // Launches 7, 8 (runtime) and 9 (driver) have both ends; the copy (10) and the orphan (11)
  // have no API record, so no arrow.
  CHECK(starts.size() == 3);
  CHECK(finishes.size() == 3);
  for (const auto& [id, start] : starts) {
    const auto flow_id = id;  // CAPTURE cannot name a structured binding on clang 14
    CAPTURE(flow_id);
    REQUIRE(finishes.contains(id));
    const nlohmann::json& finish = finishes[id];
    CHECK(start["pid"] == 1);
    CHECK(finish["pid"] == gpu_pid);
    CHECK(finish["tid"] == 13);
    CHECK(finish["bp"] == "e");
    CHECK(start["ts"].get<double>() <= finish["ts"].get<double>());
  }
  CHECK(finishes[9]["ts"].get<double>() == doctest::Approx(3.2));  // gemm_kernel starts at 3200 ns
}

// ---- CUDA graph replays (profiler/graph_replay.h), on records made by hand ----

namespace {

profiler::DeviceEvent api_call(profiler::DeviceEventKind kind, const std::string& name,
                               std::int64_t start, std::int64_t end, std::uint32_t correlation,
                               std::uint64_t scope, std::uint32_t thread = 1) {
  profiler::DeviceEvent e;
  e.kind = kind;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  e.correlation_id = correlation;
  e.external_id = scope;
  e.thread = thread;
  return e;
}

profiler::DeviceEvent kernel(const std::string& name, std::int64_t start, std::uint32_t correlation,
                             std::uint64_t scope) {
  profiler::DeviceEvent e;
  e.kind = profiler::DeviceEventKind::Kernel;
  e.name = name;
  e.start_ns = start;
  e.end_ns = start + 5;
  e.correlation_id = correlation;
  e.external_id = scope;
  return e;
}

}  // namespace

TEST_CASE("replayed graph kernels take the scopes that captured them, in capture order") {
  using Kind = profiler::DeviceEventKind;
  // Names as CUPTI 13 gives them: nvcc 13 compiles <<<...>>> into __cudaLaunchKernel.
  std::vector<profiler::DeviceEvent> events = {
      // An eager launch before the capture: it launched a kernel of its own, it is no capture.
      api_call(Kind::RuntimeApi, "__cudaLaunchKernel_v13000", 0, 2, 1, 100),
      kernel("eager_kernel", 3, 1, 100),
      api_call(Kind::RuntimeApi, "cudaStreamBeginCapture_v10000", 10, 11, 2, 200),
      // Captured: our kernel (its launch configuration pushed first, which launches nothing, and
      // the driver call it makes inside it, the same launch), a cuBLAS launch through the driver,
      // and an async memset; another thread's launch is not this capture's.
      api_call(Kind::RuntimeApi, "__cudaPushCallConfiguration_v13000", 11, 12, 10, 201),
      api_call(Kind::RuntimeApi, "__cudaLaunchKernel_v13000", 12, 16, 3, 201),
      api_call(Kind::DriverApi, "cuLaunchKernel", 13, 15, 4, 201),
      api_call(Kind::DriverApi, "cuLaunchKernel", 17, 18, 5, 202),
      api_call(Kind::RuntimeApi, "__cudaLaunchKernel_v13000", 17, 18, 6, 900, /*thread=*/2),
      api_call(Kind::RuntimeApi, "cudaMemsetAsync_v3020", 19, 20, 7, 203),
      api_call(Kind::RuntimeApi, "cudaStreamEndCapture_v10000", 21, 22, 8, 200),
      api_call(Kind::RuntimeApi, "cudaGraphLaunch_v10000", 30, 31, 9, 200),
      // The replay, in the order it ran, all carrying the graph launch's correlation id.
      kernel("split", 40, 9, 200),
      kernel("gemm", 50, 9, 200),
  };
  profiler::DeviceEvent memset = kernel("Memset", 60, 9, 200);
  memset.kind = Kind::Memset;
  events.push_back(memset);
  for (profiler::DeviceEvent& e : events) {
    if (e.is_work() && e.correlation_id == 9) e.graph_id = 1;
  }

  const profiler::GraphReplays replays = profiler::attribute_graph_replays(events);
  CHECK(replays.launches == 1);
  CHECK(replays.attributed == 3);
  CHECK(replays.unattributed == 0);
  std::map<std::string, std::uint64_t> scope_of;
  for (const profiler::DeviceEvent& e : events) {
    if (e.is_work()) scope_of[e.name] = e.external_id;
  }
  CHECK(scope_of["eager_kernel"] == 100);
  CHECK(scope_of["split"] == 201);
  CHECK(scope_of["gemm"] == 202);
  CHECK(scope_of["Memset"] == 203);

  // One replayed kernel more than captured launches: nothing is guessed, all are counted.
  events.push_back(kernel("extra", 70, 9, 200));
  events.back().graph_id = 1;
  for (profiler::DeviceEvent& e : events) {
    if (e.is_work() && e.correlation_id == 9) e.external_id = 200;
  }
  const profiler::GraphReplays mismatch = profiler::attribute_graph_replays(events);
  CHECK(mismatch.attributed == 0);
  CHECK(mismatch.unattributed == 4);
  for (const profiler::DeviceEvent& e : events) {
    if (e.is_work() && e.correlation_id == 9) CHECK(e.external_id == 200);
  }

  // Graph work under a correlation id no graph launch has (CUPTI 13.0's known fault): counted.
  events.pop_back();
  for (profiler::DeviceEvent& e : events) {
    if (e.is_work() && e.correlation_id == 9) e.correlation_id = 77;
  }
  const profiler::GraphReplays lost = profiler::attribute_graph_replays(events);
  CHECK(lost.launches == 0);
  CHECK(lost.attributed == 0);
  CHECK(lost.unattributed == 3);
}
