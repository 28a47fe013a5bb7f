// The host-timer tracer: scopes nest, durations are consistent, and profiling off records
// nothing.
#include <doctest/doctest.h>

#include <algorithm>

#include "models/gpt2/model.h"
#include "profiler/cpu_tracer.h"
#include "profiler/scope.h"
#include "runtime/error.h"

using namespace attnscope;

TEST_CASE("scopes become nested events with consistent times") {
  Context ctx(1);
  profiler::CpuTracer tracer;
  ctx.set_profiler(&tracer);
  {
    profiler::Scope outer(ctx, "outer", "step");
    { profiler::Scope inner(ctx, "inner"); }
    { profiler::Scope inner(ctx, "inner"); }
  }
  const auto& events = tracer.events();
  REQUIRE(events.size() == 3);
  CHECK(events[0].name == "inner");
  CHECK(events[0].depth == 1);
  CHECK(events[2].name == "outer");
  CHECK(events[2].category == "step");
  CHECK(events[2].depth == 0);
  for (const auto& e : events) CHECK(e.start_ns <= e.end_ns);
  CHECK(events[2].start_ns <= events[0].start_ns);
  CHECK(events[1].end_ns <= events[2].end_ns);
  CHECK(tracer.total_ns("inner") ==
        (events[0].end_ns - events[0].start_ns) + (events[1].end_ns - events[1].start_ns));
  CHECK_THROWS_AS(tracer.end_scope(), Error);
}

TEST_CASE("a GPT-2 forward pass opens a scope per layer, block and op") {
  Context ctx(1);
  const gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx);
  KVCache cache = model.new_cache(ctx, 1, 4);
  const std::vector<std::int32_t> ids = {1, 2, 3};
  model.forward(ctx, ids, 1, cache);  // profiling off: nothing to record, nothing recorded

  profiler::CpuTracer tracer;
  ctx.set_profiler(&tracer);
  const std::int32_t next = 4;
  model.forward(ctx, {&next, 1}, 1, cache);
  auto count = [&](const std::string& name) {
    return std::count_if(tracer.events().begin(), tracer.events().end(),
                         [&](const profiler::Event& e) { return e.name == name; });
  };
  const auto layers = model.config().n_layers;
  CHECK(count("forward") == 1);
  CHECK(count("layer") == layers);
  CHECK(count("attention.naive") == layers);
  CHECK(count("linear") == 4 * layers + 1);  // qkv, out, up, down per layer + the LM head
  CHECK(count("layer_norm") == 2 * layers + 1);
  CHECK(tracer.events().back().name == "forward");
}
