// Llama end to end on the GPU (label gpu): transformers parity on the committed fixtures in f32
// (logits of a prefill and of decode steps behind a filled cache within the bound of
// tests/llama_fixtures.h, greedy tokens; CUDA graphs on and off, every attention backend). Every
// test skips loudly without a usable GPU.
#include <doctest/doctest.h>

#include <cmath>

#include "llama_fixtures.h"
#include "models/llama/model.h"
#include "runtime/cuda/device.h"
#include "runtime/error.h"
#include "runtime/sampler.h"
#include "runtime/transfer.h"

using namespace attnscope;

namespace {

using testing::fixture_dir;
using testing::kLlamaFixtures;
using testing::logit_bound;
using testing::read_reference;

bool gpu_missing() {
  const std::string why = gpu::unavailable_reason();
  if (!why.empty()) MESSAGE("SKIPPED: " << why);
  return !why.empty();
}

std::vector<float> host_logits(Context& ctx, const Tensor& logits) {
  const Tensor host = to_host(ctx, logits);
  return {host.data<float>(), host.data<float>() + host.numel()};
}

std::vector<std::int32_t> greedy(Context& ctx, const llama::Model& model, gpt2::StepRunner& runner,
                                 const std::vector<std::int32_t>& prompt, int new_tokens) {
  KVCache cache = model.new_cache(ctx, 1, static_cast<std::int64_t>(prompt.size()) + new_tokens);
  Sampler sampler(SamplingOptions{});
  Tensor logits = model.forward(ctx, prompt, 1, cache, runner);
  std::vector<std::int32_t> out;
  for (int i = 0; i < new_tokens; ++i) {
    const std::int32_t next = sampler.sample(host_logits(ctx, logits));
    out.push_back(next);
    if (i + 1 < new_tokens) logits = model.forward(ctx, {&next, 1}, 1, cache, runner);
  }
  return out;
}

// The largest |actual - expected| / max(|expected|, 1) over one position's logits (a NaN counts
// as infinitely wrong).
double worst_error(const float* actual, const nlohmann::json& expected, std::int64_t vocab) {
  double worst = 0.0;
  for (std::int64_t v = 0; v < vocab; ++v) {
    const double e = expected[v].get<double>();
    const double a = actual[v];
    worst =
        std::isnan(a) ? INFINITY : std::max(worst, std::fabs(a - e) / std::max(std::fabs(e), 1.0));
  }
  return worst;
}

}  // namespace

TEST_CASE("GPU llama: f32 logits match transformers' within the derived bound, every backend") {
  if (gpu_missing()) return;
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    Context ctx(Device::CUDA, 2);
    llama::Model model = llama::Model::open(fixture_dir(name), ctx);
    const auto ids = reference["input_ids"].get<std::vector<std::vector<std::int32_t>>>();
    std::vector<std::int32_t> flat;
    for (const auto& row : ids) flat.insert(flat.end(), row.begin(), row.end());
    const auto batch = static_cast<std::int64_t>(ids.size());
    const auto length = static_cast<std::int64_t>(ids[0].size());
    const std::int64_t vocab = model.llama_config().vocab_size;
    const double bound = logit_bound(model.llama_config(), length);
    for (const std::string& backend : ops::attention::backend_names()) {
      model.set_attention(backend);
      KVCache cache = model.new_cache(ctx, batch, length);
      const std::vector<float> logits =
          host_logits(ctx, model.forward(ctx, flat, batch, cache, true));
      double worst = 0.0;
      for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t t = 0; t < length; ++t) {
          worst = std::max(worst, worst_error(logits.data() + (b * length + t) * vocab,
                                              reference["logits"][b][t], vocab));
        }
      }
      CAPTURE(name);
      CAPTURE(backend);
      CAPTURE(worst);
      CHECK(worst <= bound);
    }
  }
}

TEST_CASE("GPU llama: greedy tokens equal transformers', CUDA graphs on and off") {
  if (gpu_missing()) return;
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    Context ctx(Device::CUDA, 2);
    llama::Model model = llama::Model::open(fixture_dir(name), ctx);
    const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<std::int32_t>>();
    const auto expected = reference["greedy"]["generated_ids"].get<std::vector<std::int32_t>>();
    for (const std::string& backend : ops::attention::backend_names()) {
      model.set_attention(backend);
      for (const bool graphs : {false, true}) {
        gpt2::StepRunner runner(graphs);
        CAPTURE(name);
        CAPTURE(backend);
        CAPTURE(graphs);
        CHECK(greedy(ctx, model, runner, prompt, static_cast<int>(expected.size())) == expected);
      }
    }
  }
}

TEST_CASE(
    "GPU llama: decode steps behind a filled cache match transformers' logits, graphs on/off") {
  // Row 0 of the reference input: its first half as one prefill, then one token per step, each
  // step's logits against transformers' for that position. This is the path generate takes:
  // rotary positions and split_qkv at a cache offset, decode attention, graph replay.
  if (gpu_missing()) return;
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    Context ctx(Device::CUDA, 2);
    llama::Model model = llama::Model::open(fixture_dir(name), ctx);
    const auto ids = reference["input_ids"][0].get<std::vector<std::int32_t>>();
    const auto length = static_cast<std::int64_t>(ids.size());
    const std::int64_t prefill = length / 2;
    const std::int64_t vocab = model.llama_config().vocab_size;
    const double bound = logit_bound(model.llama_config(), length);
    for (const std::string& backend : ops::attention::backend_names()) {
      model.set_attention(backend);
      for (const bool graphs : {false, true}) {
        gpt2::StepRunner runner(graphs);
        KVCache cache = model.new_cache(ctx, 1, length);
        model.forward(ctx, {ids.data(), static_cast<std::size_t>(prefill)}, 1, cache, runner);
        double worst = 0.0;
        for (std::int64_t t = prefill; t < length; ++t) {
          const std::vector<float> logits =
              host_logits(ctx, model.forward(ctx, {&ids[t], 1}, 1, cache, runner));
          worst = std::max(worst, worst_error(logits.data(), reference["logits"][0][t], vocab));
        }
        CAPTURE(name);
        CAPTURE(backend);
        CAPTURE(graphs);
        CAPTURE(worst);
        CHECK(worst <= bound);
      }
    }
  }
}
