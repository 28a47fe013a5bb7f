// The host-timer tracer: scopes nest, durations are consistent, profiling off records nothing,
// and a device recorder (the GPU side) is told every scope edge with the scope's id.
#include <doctest/doctest.h>

#include <algorithm>

#include "models/gpt2/model.h"
#include "profiler/attach.h"
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
  CHECK(count("linear") == 2 * layers + 1);  // qkv and up per layer + the LM head
  CHECK(count("linear_residual") == 2 * layers);  // out and down add onto the residual stream
  CHECK(count("layer_norm") == 2 * layers + 1);
  CHECK(tracer.events().back().name == "forward");
}

namespace {

// A DeviceRecorder that writes down what it is told: the wiring, checked without a GPU.
class RecordingDevice final : public profiler::DeviceRecorder {
 public:
  std::vector<std::string> calls;
  void scope_opened(std::int64_t id) override { calls.push_back("open " + std::to_string(id)); }
  void scope_closed(std::int64_t id) noexcept override {
    calls.push_back("close " + std::to_string(id));
  }
  void resume() override { calls.push_back("resume"); }
  void pause() noexcept override { calls.push_back("pause"); }
  void collect(profiler::Trace& /*trace*/) override { calls.push_back("collect"); }
};

}  // namespace

TEST_CASE("a device recorder sees every scope edge, nested, between resume and pause") {
  Context ctx(1);
  profiler::CpuTracer tracer;
  RecordingDevice device;
  tracer.set_device_recorder(&device);
  {
    const profiler::Profiling on(ctx, tracer);
    profiler::Scope outer(ctx, "outer", "step");
    { profiler::Scope inner(ctx, "inner"); }
  }
  { profiler::Scope off(ctx, "not profiled"); }
  // Ids start at 1: 0 means "no scope" in device records.
  const std::vector<std::string> expected = {"resume",  "open 1",  "open 2",
                                             "close 2", "close 1", "pause"};
  CHECK(device.calls == expected);
  REQUIRE(tracer.events().size() == 2);
  CHECK(tracer.events()[0].id == 2);
  CHECK(tracer.events()[1].id == 1);
  CHECK(tracer.events()[0].parent == 1);
  CHECK(tracer.events()[0].device_ns == -1);  // nothing measured it
}
