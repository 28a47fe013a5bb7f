// The engine (engine/): the scheduler's passes on its own; the paged forward step against
// Hugging Face's logits; and many requests at once (random prompts and arrivals, shared
// prefixes, cancellations, a pool small enough to preempt) whose tokens must equal each
// request's tokens run alone through the contiguous path, for GPT-2 and Llama fixtures and every
// attention backend, with no block leaked; refusals that leave the other requests alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "engine_checks.h"
#include "hf_fixtures.h"
#include "llama_fixtures.h"
#include "model_checks.h"
#include "models/gpt2/model.h"
#include "models/llama/model.h"
#include "ops/attention/registry.h"
#include "runtime/attention_tap.h"
#include "runtime/error.h"

using namespace attnscope;
using engine::Engine;
using engine::FinishReason;
using engine::Request;
using engine::RequestId;

namespace {

std::vector<std::int32_t> iota_ids(std::size_t count, std::int32_t first = 1) {
  std::vector<std::int32_t> ids(count);
  std::iota(ids.begin(), ids.end(), first);
  return ids;
}

// A sequence as the scheduler sees it, with `pending` tokens waiting after `computed`.
engine::Sequence sequence_of(RequestId id, std::size_t prompt_length) {
  Request request;
  request.prompt = iota_ids(prompt_length, static_cast<std::int32_t>(100 * id));
  return engine::Sequence(id, request);
}

std::vector<RequestId> planned_ids(const engine::StepPlan& plan) {
  std::vector<RequestId> ids;
  for (const auto& item : plan.items) ids.push_back(item.sequence->id);
  return ids;
}

}  // namespace

TEST_CASE(
    "scheduler: decodes first, prefill in chunks within the budget, first come first served") {
  BlockPool pool(64, 4);
  engine::Scheduler scheduler(pool, {/*max_batch_tokens=*/10, /*max_running=*/3});
  engine::Sequence a = sequence_of(1, 25), b = sequence_of(2, 3), c = sequence_of(3, 2),
                   d = sequence_of(4, 1);
  for (engine::Sequence* s : {&a, &b, &c, &d}) scheduler.add(s);
  // Step 1: a's first chunk takes the whole budget; nobody else is admitted.
  engine::StepPlan plan = scheduler.schedule();
  CHECK(planned_ids(plan) == std::vector<RequestId>{1});
  CHECK(plan.items[0].tokens == 10);
  a.computed += 10;
  // Step 2: a's next chunk takes the whole budget again.
  plan = scheduler.schedule();
  CHECK(planned_ids(plan) == std::vector<RequestId>{1});
  a.computed += 10;
  // Step 3: a's last 5, then b's 3 and c's 2 are admitted (the cap of 3 running stops d).
  plan = scheduler.schedule();
  CHECK(planned_ids(plan) == std::vector<RequestId>{1, 2, 3});
  CHECK(plan.prefill_tokens() == 10);
  for (auto& item : plan.items) item.sequence->computed += item.tokens;
  for (engine::Sequence* s : {&a, &b, &c}) s->tokens.push_back(7);  // each samples a token
  // Step 4: three decodes, one token each.
  plan = scheduler.schedule();
  CHECK(planned_ids(plan) == std::vector<RequestId>{1, 2, 3});
  CHECK(plan.decode_tokens() == 3);
  CHECK(scheduler.waiting() == 1);
  scheduler.remove(&b);  // finished: its blocks come back and d can start
  for (auto& item : plan.items) item.sequence->computed += item.tokens;
  for (engine::Sequence* s : {&a, &c}) s->tokens.push_back(7);
  plan = scheduler.schedule();
  CHECK(planned_ids(plan) == std::vector<RequestId>{1, 3, 4});
  scheduler.remove(&a);
  scheduler.remove(&c);
  scheduler.remove(&d);
  CHECK(pool.counters().in_use == 0);
}

TEST_CASE("scheduler: out of blocks, the newest running sequence is preempted and resumes first") {
  BlockPool pool(4, 4);  // 16 positions in all
  engine::Scheduler scheduler(pool, {64, 8});
  engine::Sequence a = sequence_of(1, 7), b = sequence_of(2, 7);
  scheduler.add(&a);
  scheduler.add(&b);
  engine::StepPlan plan = scheduler.schedule();  // both prompts: 2 blocks each, the pool is full
  CHECK(planned_ids(plan) == std::vector<RequestId>{1, 2});
  for (auto& item : plan.items) item.sequence->computed += item.tokens;
  a.tokens.push_back(5);
  b.tokens.push_back(5);
  plan = scheduler.schedule();  // positions 7: still in the second block for both
  for (auto& item : plan.items) item.sequence->computed += item.tokens;
  a.tokens.push_back(5);
  b.tokens.push_back(5);
  // Position 8 opens a third block for a: none is free, so b (the newest) is preempted.
  plan = scheduler.schedule();
  CHECK(planned_ids(plan) == std::vector<RequestId>{1});
  REQUIRE(plan.preempted.size() == 1);
  CHECK(plan.preempted[0] == &b);
  CHECK(b.computed == 0);
  CHECK(b.tokens.size() == 9);  // its generated tokens are kept, to be recomputed
  CHECK(scheduler.preemptions() == 1);
  scheduler.remove(&a);  // a finishes: b is admitted again, all 9 tokens to compute
  plan = scheduler.schedule();
  CHECK(planned_ids(plan) == std::vector<RequestId>{2});
  CHECK(plan.items[0].tokens == 9 - b.computed);
  scheduler.remove(&b);
  CHECK(pool.counters().in_use == 0);
}

namespace {

// Runs `check(ctx, model, bound)` for GPT-2's tiny-a and tiny-b (heads of 16 and 32) and Llama's
// gqa-tied-llama3 with every attention backend; bound is the family's f32 parity bound on
// |logit - transformers'| / max(|transformers'|, 1).
template <typename Check>
void for_each_family_and_backend(const Check& check) {
  Context ctx(2);
  for (const char* fixture : {"tiny-a", "tiny-b"}) {
    CAPTURE(fixture);
    gpt2::Model model = gpt2::Model::open(testing::hf_fixture_dir(fixture), ctx);
    const nlohmann::json reference = testing::read_hf_reference(fixture);
    for (const std::string& backend : ops::attention::backend_names()) {
      CAPTURE(backend);
      model.set_attention(backend);
      check(ctx, model, reference, 1e-4);
    }
  }
  llama::Model model = llama::Model::open(testing::fixture_dir("gqa-tied-llama3"), ctx);
  const nlohmann::json reference = testing::read_reference("gqa-tied-llama3");
  const std::int64_t length = testing::reference_prefill(reference).length;
  for (const std::string& backend : ops::attention::backend_names()) {
    CAPTURE(backend);
    model.set_attention(backend);
    check(ctx, model, reference, testing::logit_bound(model.llama_config(), length));
  }
}

}  // namespace

TEST_CASE(
    "forward_paged: each row in random chunks over shuffled blocks gives transformers' logits, "
    "in an f32, f16, bf16 or q8_0 cache") {
  std::mt19937 rng(51);
  for_each_family_and_backend([&](Context& ctx, const LanguageModel& model,
                                  const nlohmann::json& reference, double f32_bound) {
    // A 16-bit cache rounds every key and value (by up to 2^-11 relative in f16, 2^-8 in bf16),
    // q8_0 to its block's largest / 254; the bounds are 2.3-3x the worst seen over these models
    // and backends (f16 5.3e-3, bf16 4.3e-2, q8_0 0.11 on tiny-b: random weights amplify it).
    for (const DType cache_dtype : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
      CAPTURE(dtype_name(cache_dtype));
      if (cache_dtype == DType::Q8_0 && model.config().head_dim % 32 != 0) {
        CHECK_THROWS_WITH_AS(model.kv_geometry(3, cache_dtype),
                             doctest::Contains("q8_0 needs heads a multiple of 32 wide"), Error);
        continue;
      }
      const double bound = cache_dtype == DType::F32    ? f32_bound
                           : cache_dtype == DType::F16  ? 1.5e-2
                           : cache_dtype == DType::BF16 ? 0.1
                                                        : 0.3;
      const testing::Prefill prefill = testing::reference_prefill(reference);
      const std::vector<double> expected = testing::reference_logits(reference);
      const std::int64_t vocab = model.config().vocab_size, block_tokens = 3;
      const std::int64_t per_row = (prefill.length + block_tokens - 1) / block_tokens;
      PagedKVCache cache(model.kv_geometry(block_tokens, cache_dtype), prefill.batch * per_row + 2,
                         ctx.allocator());
      std::vector<std::int64_t> all_blocks(static_cast<std::size_t>(prefill.batch * per_row + 2));
      std::iota(all_blocks.begin(), all_blocks.end(), 0);
      std::shuffle(all_blocks.begin(), all_blocks.end(), rng);
      std::vector<std::int64_t> done(static_cast<std::size_t>(prefill.batch), 0);
      double worst = 0;
      while (done[0] < prefill.length) {
        // Every row advances by its own random chunk: 1 token (as a decode) up to the rest.
        std::vector<LanguageModel::SequenceStep> steps;
        std::vector<std::int64_t> ends;
        for (std::int64_t b = 0; b < prefill.batch; ++b) {
          const std::int64_t start = done[static_cast<std::size_t>(b)];
          if (start == prefill.length) continue;
          std::uniform_int_distribution<std::int64_t> chunk(1, prefill.length - start);
          const std::int64_t tokens = b == 0 ? chunk(rng) : prefill.length - start;
          steps.push_back({std::span(prefill.ids)
                               .subspan(static_cast<std::size_t>(b * prefill.length + start),
                                        static_cast<std::size_t>(tokens)),
                           start,
                           std::span(all_blocks)
                               .subspan(static_cast<std::size_t>(b * per_row),
                                        static_cast<std::size_t>(per_row))});
          ends.push_back(b * prefill.length + start + tokens - 1);
          done[static_cast<std::size_t>(b)] += tokens;
        }
        const Tensor logits = model.forward_paged(ctx, steps, cache);
        REQUIRE(logits.shape() == Shape{static_cast<std::int64_t>(steps.size()), vocab});
        for (std::size_t s = 0; s < steps.size(); ++s) {
          for (std::int64_t v = 0; v < vocab; ++v) {
            const double want = expected[static_cast<std::size_t>(ends[s] * vocab + v)];
            const double got = logits.data<float>()[static_cast<std::int64_t>(s) * vocab + v];
            worst = std::max(worst, std::fabs(got - want) / std::max(std::fabs(want), 1.0));
          }
        }
      }
      CHECK(worst < bound);
    }
  });
}

namespace {

// One request of the random mix, and what happened to it.
struct Planned {
  Request request;
  int arrival_step = 0;
  int cancel_step = -1;  // -1: never cancelled
  RequestId id = 0;
  std::vector<std::int32_t> tokens;
  bool finished = false;
  FinishReason reason = FinishReason::length;
};

// 56 requests: prompts of 1 to 30 random ids, or one of three 12-to-20-token prefixes plus a
// random tail (prefix-cache hits), 1 to 10 new tokens, arrivals over the first 30 steps, every
// eighth cancelled a few steps after it arrives, a few sampled (temperature 0.9, their own
// seeds), a few stopping at eos.
std::vector<Planned> random_mix(std::mt19937& rng, std::int64_t vocab) {
  std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(vocab - 1));
  auto random_ids = [&](std::int64_t count) {
    std::vector<std::int32_t> ids(static_cast<std::size_t>(count));
    for (std::int32_t& x : ids) x = id(rng);
    return ids;
  };
  std::vector<std::vector<std::int32_t>> prefixes;
  for (int p = 0; p < 3; ++p) prefixes.push_back(random_ids(12 + 4 * p));
  std::vector<Planned> mix(56);
  for (std::size_t i = 0; i < mix.size(); ++i) {
    Planned& r = mix[i];
    if (i % 3 == 0) {
      r.request.prompt = prefixes[i % prefixes.size()];
      const std::vector<std::int32_t> tail = random_ids(1 + static_cast<std::int64_t>(rng() % 8));
      r.request.prompt.insert(r.request.prompt.end(), tail.begin(), tail.end());
    } else {
      r.request.prompt = random_ids(1 + static_cast<std::int64_t>(rng() % 30));
    }
    r.request.max_tokens = 1 + static_cast<std::int64_t>(rng() % 10);
    r.request.ignore_eos = i % 5 != 0;
    if (i % 7 == 3) r.request.sampling = SamplingOptions{0.9f, 20, 0.95f, 1000 + i};
    r.arrival_step = static_cast<int>(rng() % 30);
    if (i % 8 == 5) r.cancel_step = r.arrival_step + static_cast<int>(rng() % 4);
  }
  return mix;
}

}  // namespace

TEST_CASE("engine: 56 random requests at once give each one's tokens alone, and leak no block") {
  std::mt19937 rng(52);
  for_each_family_and_backend([&](Context& ctx, const LanguageModel& model,
                                  const nlohmann::json& /*reference*/, double bound) {
    std::vector<Planned> mix = random_mix(rng, model.config().vocab_size);
    engine::EngineOptions options;
    options.block_tokens = 4;
    // 24 blocks (96 positions): the largest request fits alone, a dozen at once do not.
    options.kv_memory_bytes = 24 * model.kv_geometry(4).block_bytes();
    options.scheduler = {/*max_batch_tokens=*/32, /*max_running=*/12};
    Engine engine(model, ctx, options);
    std::map<RequestId, Planned*> by_id;
    for (int step = 0; step < 10000; ++step) {
      for (Planned& r : mix) {
        if (r.arrival_step == step) {
          r.id = engine.submit(r.request);
          by_id[r.id] = &r;
        }
        if (r.cancel_step == step && !r.finished) engine.cancel(r.id);
      }
      const engine::StepReport report = engine.step();
      for (const engine::Event& e : report.events) {
        Planned& r = *by_id.at(e.id);
        REQUIRE_FALSE(r.finished);
        if (e.has_token) r.tokens.push_back(e.token);
        if (e.finished) {
          r.finished = true;
          r.reason = e.reason;
        }
      }
      if (step >= 30 && engine.idle()) break;
    }
    CHECK(engine.idle());
    const PagedKVCache::Usage usage = engine.kv_usage();
    CHECK(usage.blocks.in_use == 0);  // every block back in the pool
    CHECK(usage.blocks.empty + usage.blocks.cached_free == usage.blocks.blocks);
    CHECK(engine.scheduler().preemptions() > 0);  // the pool was small enough to preempt
    CHECK(usage.blocks.prefix_hits > 0);          // shared prefixes were reused
    int compared = 0, cancelled = 0;
    for (const Planned& r : mix) {
      REQUIRE(r.finished);
      if (r.reason == FinishReason::cancelled) {
        ++cancelled;
        continue;
      }
      const testing::Alone alone = testing::run_alone(ctx, model, r.request);
      CAPTURE(r.id);
      if (r.request.sampling.temperature == 0.0f &&
          testing::differs_at_near_tie(r.tokens, alone, bound)) {
        MESSAGE("request " << r.id << " differs from its run alone at a near tie");
        continue;
      }
      CHECK(r.tokens == alone.tokens);
      const bool ended_at_eos = !r.request.ignore_eos && model.config().is_eos(r.tokens.back());
      CHECK(r.reason == (ended_at_eos ? FinishReason::eos : FinishReason::length));
      ++compared;
    }
    CHECK(cancelled > 0);
    CHECK(compared >= 40);
  });
}

TEST_CASE("engine: a stop string ends a request at the token that completes it") {
  Context ctx(2);
  gpt2::Model model = gpt2::Model::open(testing::hf_fixture_dir("tiny-a"), ctx);
  // Token t reads "<t>": the stop string "3><" + the third token's id ends the request as soon
  // as the third token is out, whichever tokens came before.
  const engine::TokenVocabulary text{[](std::int32_t id) { return "<" + std::to_string(id) + ">"; },
                                     {}};
  const std::vector<std::int32_t> prompt = iota_ids(7);
  const std::vector<std::int32_t> alone = testing::greedy(ctx, model, prompt, 8);
  Engine engine(model, ctx, engine::EngineOptions{}, text);
  Request request;
  request.prompt = prompt;
  request.max_tokens = 8;
  request.ignore_eos = true;
  request.stop = {"never", "<" + std::to_string(alone[2]) + ">"};
  // An earlier token with the same id would stop sooner: expect the first occurrence.
  const auto first = std::find(alone.begin(), alone.end(), alone[2]) - alone.begin();
  const RequestId id = engine.submit(request);
  std::vector<std::int32_t> tokens;
  FinishReason reason = FinishReason::length;
  while (!engine.idle()) {
    for (const engine::Event& e : engine.step().events) {
      REQUIRE(e.id == id);
      if (e.has_token) tokens.push_back(e.token);
      if (e.finished) reason = e.reason;
    }
  }
  CHECK(reason == FinishReason::stop);
  CHECK(tokens == std::vector<std::int32_t>(alone.begin(), alone.begin() + first + 1));
}

TEST_CASE("engine: requests that can never run are refused one by one; the others go on") {
  Context ctx(2);
  gpt2::Model model = gpt2::Model::open(testing::hf_fixture_dir("tiny-a"), ctx);
  engine::EngineOptions options;
  options.block_tokens = 4;
  options.kv_memory_bytes = 8 * model.kv_geometry(4).block_bytes();  // 32 positions
  Engine engine(model, ctx, options);
  auto request = [](std::vector<std::int32_t> prompt, std::int64_t max_tokens) {
    Request r;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
  };
  const RequestId good = engine.submit(request(iota_ids(5), 4));
  std::map<RequestId, std::string> refused = {
      {engine.submit(request({}, 4)), "the prompt is empty"},
      {engine.submit(request(iota_ids(64, 0), 4)), "leaves no room to generate"},
      {engine.submit(request(iota_ids(40, 0), 4)), "needs more than the whole KV cache"},
      {engine.submit(request(iota_ids(3), 0)), "max_tokens must be at least 1"},
      {engine.submit(request({1, 512}, 2)), "token id 512 is outside the vocabulary"},
  };
  Request stop = request(iota_ids(3), 2);
  stop.stop = {"x"};
  refused[engine.submit(stop)] = "stop strings need the tokenizer's text";
  Request hot = request(iota_ids(3), 2);
  hot.sampling.temperature = -1.0f;
  refused[engine.submit(hot)] = "--temperature";
  std::vector<std::int32_t> good_tokens;
  bool good_finished = false;
  for (int step = 0; step < 100 && !engine.idle(); ++step) {
    for (const engine::Event& e : engine.step().events) {
      if (e.id == good) {
        if (e.has_token) good_tokens.push_back(e.token);
        good_finished |= e.finished;
        continue;
      }
      REQUIRE(refused.contains(e.id));
      CHECK(e.finished);
      CHECK(e.reason == FinishReason::refused);
      CHECK(e.error.find(refused[e.id]) != std::string::npos);
      refused.erase(e.id);
    }
  }
  CHECK(refused.empty());
  CHECK(good_finished);
  CHECK(good_tokens == testing::greedy(ctx, model, iota_ids(5), 4));
  CHECK_FALSE(engine.cancel(good));  // finished: nothing to cancel
  engine::EngineOptions tiny = options;
  tiny.kv_memory_bytes = 10;
  CHECK_THROWS_WITH_AS(Engine(model, ctx, tiny), doctest::Contains("holds no block"), Error);
}

namespace {

// Throws from inside the model's forward pass, after its first layer, while armed: a step that
// fails as a failed allocation or a device error would, with the cache half written.
struct FailingLayer : AttentionTap {
  bool armed = false;
  bool device_fault = false;  // a DeviceError (a kernel fault) instead of running out of memory
  void layer_output(Context& /*ctx*/, std::int64_t layer, const Tensor& /*hidden*/) override {
    if (!armed || layer != 0) return;
    if (device_fault) throw DeviceError("cuda", "an illegal memory access (injected by the test)");
    throw Error("allocator", "out of memory (injected by the test)");
  }
};

}  // namespace

TEST_CASE("engine: a step that fails fails the requests it ran; the waiting ones go on") {
  Context ctx(2);
  gpt2::Model model = gpt2::Model::open(testing::hf_fixture_dir("tiny-a"), ctx);
  engine::EngineOptions options;
  options.block_tokens = 4;
  options.scheduler = {/*max_batch_tokens=*/64, /*max_running=*/2};  // the third one waits
  Engine engine(model, ctx, options);
  const std::size_t idle_bytes = engine.allocated_bytes();
  auto request = [](std::vector<std::int32_t> prompt) {
    Request r;
    r.prompt = std::move(prompt);
    r.max_tokens = 5;
    r.ignore_eos = true;
    return r;
  };
  const std::vector<std::int32_t> shared_prompt = iota_ids(9);  // two full blocks, cached
  const RequestId first = engine.submit(request(shared_prompt));
  const RequestId second = engine.submit(request(iota_ids(6, 40)));
  const RequestId waiting = engine.submit(request(iota_ids(7, 80)));
  CHECK(engine.step().scheduled == std::vector<RequestId>{first, second});

  FailingLayer tap;
  ctx.set_attention_tap(&tap);
  tap.armed = true;
  const engine::StepReport failed = engine.step();
  tap.armed = false;
  CHECK(failed.scheduled == std::vector<RequestId>{first, second});
  std::vector<RequestId> failed_ids;
  for (const engine::Event& e : failed.events) {
    CHECK(e.finished);
    CHECK_FALSE(e.has_token);
    CHECK(e.reason == FinishReason::failed);
    CHECK(e.error == "the model step failed: allocator: out of memory (injected by the test)");
    failed_ids.push_back(e.id);
  }
  CHECK(failed_ids == std::vector<RequestId>{first, second});
  CHECK(engine.in_flight() == 1);  // the waiting request, untouched

  // The failed step wrote into the cache: a new request reusing the first one's cached prompt
  // blocks, and the waiting one, still give the tokens they give alone.
  const RequestId again = engine.submit(request(shared_prompt));
  std::map<RequestId, std::vector<std::int32_t>> tokens;
  for (int step = 0; step < 100 && !engine.idle(); ++step) {
    for (const engine::Event& e : engine.step().events) {
      CHECK(e.reason != FinishReason::failed);
      if (e.has_token) tokens[e.id].push_back(e.token);
    }
  }
  CHECK(engine.idle());
  CHECK(tokens[waiting] == testing::greedy(ctx, model, iota_ids(7, 80), 5));
  CHECK(tokens[again] == testing::greedy(ctx, model, shared_prompt, 5));
  CHECK(engine.kv_usage().blocks.prefix_hits > 0);
  CHECK(engine.kv_usage().blocks.in_use == 0);
  CHECK(engine.allocated_bytes() == idle_bytes);  // the failed step's temporaries freed
  ctx.set_attention_tap(nullptr);
}

TEST_CASE("engine: after a device error every request fails at once, and the engine says why") {
  Context ctx(2);
  gpt2::Model model = gpt2::Model::open(testing::hf_fixture_dir("tiny-a"), ctx);
  engine::EngineOptions options;
  options.block_tokens = 4;
  options.scheduler = {/*max_batch_tokens=*/64, /*max_running=*/1};  // the second one waits
  Engine engine(model, ctx, options);
  Request r;
  r.prompt = iota_ids(6);
  r.max_tokens = 5;
  const RequestId running = engine.submit(r);
  const RequestId waiting = engine.submit(r);
  CHECK(engine.device_failure().empty());

  FailingLayer tap;
  tap.armed = true;
  tap.device_fault = true;
  ctx.set_attention_tap(&tap);
  const engine::StepReport faulted = engine.step();
  ctx.set_attention_tap(nullptr);
  const std::string error =
      "the model step failed: cuda: an illegal memory access (injected by "
      "the test)";
  REQUIRE(faulted.events.size() == 1);
  CHECK(faulted.events[0].id == running);
  CHECK(faulted.events[0].reason == FinishReason::failed);
  CHECK(faulted.events[0].error == error);
  CHECK(engine.device_failure() == error + " (the device is unusable from here on: restart)");

  // The waiting request and a new one fail at the next step, without a forward pass.
  const RequestId later = engine.submit(r);
  const engine::StepReport after = engine.step();
  CHECK(after.scheduled.empty());
  std::vector<RequestId> failed;
  for (const engine::Event& e : after.events) {
    CHECK(e.reason == FinishReason::failed);
    CHECK(e.error == engine.device_failure());
    failed.push_back(e.id);
  }
  std::sort(failed.begin(), failed.end());
  CHECK(failed == std::vector<RequestId>{waiting, later});
  CHECK(engine.idle());
  CHECK(engine.kv_usage().blocks.in_use == 0);
}

TEST_CASE("engine: presence and frequency penalties and logit bias, as OpenAI defines them") {
  Context ctx(2);
  gpt2::Model model = gpt2::Model::open(testing::hf_fixture_dir("tiny-a"), ctx);
  const std::int64_t vocab = model.config().vocab_size;
  Engine engine(model, ctx, engine::EngineOptions{});
  const auto run = [&](const engine::LogitAdjustments& adjustments) {
    Request r;
    r.prompt = iota_ids(5);
    r.max_tokens = 12;
    r.ignore_eos = true;
    r.adjustments = adjustments;
    const RequestId id = engine.submit(r);
    std::vector<std::int32_t> tokens;
    for (int step = 0; step < 100 && !engine.idle(); ++step) {
      for (const engine::Event& e : engine.step().events) {
        CHECK(e.id == id);
        CHECK(e.error.empty());
        if (e.has_token) tokens.push_back(e.token);
      }
    }
    return tokens;
  };
  // The reference, written from the definition: each step's raw logits (a fresh forward over
  // everything so far), adjusted in float64, greedy.
  const auto reference = [&](const engine::LogitAdjustments& adjustments) {
    std::vector<std::int32_t> ids = iota_ids(5);
    std::map<std::int32_t, int> counts;
    std::vector<std::int32_t> tokens;
    for (int step = 0; step < 12; ++step) {
      KVCache cache = model.new_cache(ctx, 1, static_cast<std::int64_t>(ids.size()));
      const std::vector<float> row = testing::host_logits(ctx, model.forward(ctx, ids, 1, cache));
      std::vector<double> adjusted(row.begin(), row.end());
      for (const auto& [token, count] : counts) {
        adjusted[static_cast<std::size_t>(token)] -=
            adjustments.frequency_penalty * static_cast<double>(count) +
            adjustments.presence_penalty;
      }
      for (const auto& [token, bias] : adjustments.logit_bias) {
        adjusted[static_cast<std::size_t>(token)] += bias;
      }
      const auto next = static_cast<std::int32_t>(
          std::max_element(adjusted.begin(), adjusted.end()) - adjusted.begin());
      tokens.push_back(next);
      ids.push_back(next);
      ++counts[next];
    }
    return tokens;
  };
  const std::vector<std::int32_t> plain = run({});
  REQUIRE(plain == reference({}));
  // A tiny random model repeats itself greedily; penalties must change that, as defined.
  for (const engine::LogitAdjustments& adjustments :
       {engine::LogitAdjustments{2.0f, 0.0f, {}}, engine::LogitAdjustments{0.0f, 1.5f, {}},
        engine::LogitAdjustments{-2.0f, 0.5f, {}},
        engine::LogitAdjustments{0.0f, 0.0f, {{plain[0], -100.0f}, {7, 3.0f}}}}) {
    CAPTURE(adjustments.presence_penalty);
    CAPTURE(adjustments.frequency_penalty);
    const std::vector<std::int32_t> adjusted = run(adjustments);
    CHECK(adjusted == reference(adjustments));
    CHECK(adjusted != plain);
  }
  // +100 all but forces a token; refused: penalties and biases out of range, unknown ids.
  CHECK(run({0.0f, 0.0f, {{42, 100.0f}}}) == std::vector<std::int32_t>(12, 42));
  for (const auto& [adjustments, why] :
       std::vector<std::pair<engine::LogitAdjustments, std::string>>{
           {{2.5f, 0.0f, {}}, "a penalty must be in [-2, 2]"},
           {{0.0f, 0.0f, {{1, 101.0f}}}, "a logit_bias must be in [-100, 100]"},
           {{0.0f, 0.0f, {{static_cast<std::int32_t>(vocab), 1.0f}}},
            "logit_bias names token id 512, outside the vocabulary [0, 512)"}}) {
    Request r;
    r.prompt = iota_ids(3);
    r.adjustments = adjustments;
    CHECK(engine.refusal(r) == why);
  }
}
