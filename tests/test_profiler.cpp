// The host-timer tracer: scopes nest, durations are consistent, profiling off records nothing,
// and a device recorder (the GPU side) is told every scope edge with the scope's id.
#include <doctest/doctest.h>

#include <algorithm>

#include "models/gpt2/model.h"
#include "profiler/attach.h"
#include "profiler/cpu_tracer.h"
#include "profiler/scope.h"
#include "profiler/summary.h"
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
  CHECK(count("linear") == 2 * layers + 1);       // qkv and up per layer + the LM head
  CHECK(count("linear_residual") == 2 * layers);  // out and down add onto the residual stream
  CHECK(count("layer_norm") == 2 * layers + 1);
  CHECK(tracer.events().back().name == "forward");
}

TEST_CASE("the model numbers its layers; every op states its work; attention adds up by layer") {
  Context ctx(1);
  const gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx);
  const std::int64_t tokens = 5;
  KVCache cache = model.new_cache(ctx, 1, tokens);
  const std::vector<std::int32_t> ids = {1, 2, 3, 4, 5};
  profiler::CpuTracer tracer;
  ctx.set_profiler(&tracer);
  model.forward(ctx, ids, 1, cache);
  ctx.set_profiler(nullptr);
  const std::vector<profiler::Event>& events = tracer.events();
  const ModelConfig& config = model.config();

  // Layers 0..L-1, each once, in order.
  std::vector<std::int64_t> layer_indices;
  for (const profiler::Event& e : events) {
    if (e.name == "layer") layer_indices.push_back(e.index);
  }
  std::vector<std::int64_t> expected(static_cast<std::size_t>(config.n_layers));
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<std::int64_t>(i);
  CHECK(layer_indices == expected);

  // Each linear states 2 N M K FLOPs, the shapes read from the config, not from the op.
  const std::int64_t c = config.d_model;
  std::vector<std::uint64_t> linear_flops;
  for (const profiler::Event& e : events) {
    if (e.name == "linear") linear_flops.push_back(e.flops);
  }
  REQUIRE(linear_flops.size() == static_cast<std::size_t>(2 * config.n_layers + 1));
  CHECK(linear_flops[0] == static_cast<std::uint64_t>(2 * tokens * 3 * c * c));  // fused qkv
  CHECK(linear_flops[1] == static_cast<std::uint64_t>(2 * tokens * 4 * c * c));  // MLP up
  CHECK(linear_flops.back() == static_cast<std::uint64_t>(2 * 1 * config.vocab_size * c));  // head
  for (const profiler::Event& e : events) {
    if (e.name == "layer_norm" || e.name == "linear" || e.category == "attention") {
      CAPTURE(e.name);
      CHECK(e.bytes > 0);
    }
  }

  // Per layer: one attention call each, and the rows add up to every attention call's time.
  const std::vector<profiler::LayerTime> layers =
      profiler::times_by_layer(events, 0, events.size());
  REQUIRE(layers.size() == static_cast<std::size_t>(config.n_layers));
  std::int64_t by_layers = 0, total = 0;
  for (const profiler::LayerTime& layer : layers) {
    CHECK(layer.calls == 1);
    CHECK(layer.time_ns <= layer.layer_ns);
    by_layers += layer.time_ns;
  }
  for (const profiler::Event& e : events) total += e.category == "attention" ? e.duration_ns() : 0;
  CHECK(by_layers == total);
  CHECK(profiler::format_layer_table(layers).find("all") != std::string::npos);
}

TEST_CASE("set_work and set_index describe the innermost open scope; outside one they throw") {
  Context ctx(1);
  profiler::CpuTracer tracer;
  ctx.set_profiler(&tracer);
  {
    profiler::Scope outer(ctx, "outer", "layer");
    outer.set_index(7);
    profiler::Scope inner(ctx, "inner");
    inner.set_work(12, 34);
  }
  ctx.set_profiler(nullptr);
  REQUIRE(tracer.events().size() == 2);
  CHECK(tracer.events()[0].name == "inner");
  CHECK(tracer.events()[0].flops == 12);
  CHECK(tracer.events()[0].bytes == 34);
  CHECK(tracer.events()[0].index == -1);
  CHECK(tracer.events()[1].index == 7);
  CHECK_THROWS_AS(tracer.set_work(1, 1), Error);
  CHECK_THROWS_AS(tracer.set_index(1), Error);
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
  bool uses_event_timers() const override { return false; }
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
