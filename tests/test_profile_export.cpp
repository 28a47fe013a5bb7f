// The profiler's outputs: the Chrome trace is valid Trace Event Format with properly nested,
// monotonic scopes per thread; summary rows add up to their events; the memory counter's peak is
// the allocator's; every backend's attention calls run the steps their cost model predicts.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/gpt2/model.h"
#include "profiler/attach.h"
#include "profiler/chrome_trace.h"
#include "profiler/cpu_tracer.h"
#include "profiler/summary.h"
#include "profiler/summary_json.h"
#include "runtime/error.h"

#ifdef ATTNSCOPE_WITH_CUPTI
#include <cuda_runtime.h>

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
    call.q = Tensor::empty({1, config.n_heads, 4, config.head_dim()}, DType::F32, ctx.allocator());
    call.k = cache.keys(0);
    call.v = cache.values(0);
    call.out = Tensor::empty(call.q.shape(), DType::F32, ctx.allocator());
    call.kv_len = 4;
    const ops::attention::CostModel expected = model.attention().cost_model(ctx, call);
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

#ifdef ATTNSCOPE_WITH_CUPTI
// Compile-and-link check of the CUPTI tracer; it can only be made where a CUDA device exists.
TEST_CASE("the CUPTI tracer starts empty") {
  int device_count = 0;
  if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count == 0) {
    MESSAGE("SKIPPED: no CUDA device");
    return;
  }
  const profiler::CuptiTracer tracer;
  CHECK_FALSE(tracer.active());
  CHECK(tracer.events().empty());
  CHECK(tracer.dropped_records() == 0);
}
#endif
