// Llama end to end: Hugging Face parity on committed fixtures made by transformers'
// LlamaForCausalLM (tools/fixtures/make_hf_llama_fixtures.py: grouped-query attention on and
// off, tied and untied heads, llama3 rope scaling, a sharded checkpoint), logits and greedy
// tokens for every attention backend; the synthetic shapes; the loader's refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture_paths.h"
#include "llama_fixtures.h"
#include "models/llama/model.h"
#include "runtime/error.h"
#include "runtime/sampler.h"

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

using testing::fixture_dir;
using testing::kLlamaFixtures;
using testing::logit_bound;
using testing::read_reference;

// Greedy generation through prefill + one-token decode steps, as `attnscope generate` does it.
std::vector<std::int32_t> greedy(Context& ctx, const llama::Model& model,
                                 const std::vector<std::int32_t>& prompt, int new_tokens) {
  KVCache cache = model.new_cache(ctx, 1, static_cast<std::int64_t>(prompt.size()) + new_tokens);
  Sampler sampler(SamplingOptions{});
  Tensor logits = model.forward(ctx, prompt, 1, cache);
  const auto vocab = static_cast<std::size_t>(model.llama_config().vocab_size);
  std::vector<std::int32_t> out;
  for (int i = 0; i < new_tokens; ++i) {
    const std::int32_t next = sampler.sample({logits.data<float>(), vocab});
    out.push_back(next);
    if (i + 1 < new_tokens) logits = model.forward(ctx, {&next, 1}, 1, cache);
  }
  return out;
}

}  // namespace

TEST_CASE("llama: logits match transformers' within the derived bound for every backend") {
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    Context ctx(2);
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
      const Tensor logits = model.forward(ctx, flat, batch, cache, true);
      REQUIRE(logits.shape() == Shape{batch, length, vocab});
      double worst = 0.0;
      for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t t = 0; t < length; ++t) {
          const auto& row = reference["logits"][b][t];
          for (std::int64_t v = 0; v < vocab; ++v) {
            const double expected = row[v].get<double>();
            const double actual = logits.data<float>()[(b * length + t) * vocab + v];
            worst =
                std::max(worst, std::fabs(actual - expected) / std::max(std::fabs(expected), 1.0));
          }
        }
      }
      CAPTURE(name);
      CAPTURE(backend);
      CAPTURE(worst);
      CHECK(worst <= bound);
    }
  }
}

TEST_CASE("llama: greedy continuations equal transformers' for every backend") {
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    Context ctx(2);
    llama::Model model = llama::Model::open(fixture_dir(name), ctx);
    // Every greedy step's top-1 lead exceeds twice the logit bound: no rounding difference
    // within the bound can change a token (the fixtures are made so; checked here).
    const double margin = reference["greedy_min_margin"].get<double>();
    REQUIRE(margin > 2.0 * logit_bound(model.llama_config(), 16));
    const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<std::int32_t>>();
    const auto expected = reference["greedy"]["generated_ids"].get<std::vector<std::int32_t>>();
    for (const std::string& backend : ops::attention::backend_names()) {
      model.set_attention(backend);
      CAPTURE(name);
      CAPTURE(backend);
      CHECK(greedy(ctx, model, prompt, static_cast<int>(expected.size())) == expected);
    }
  }
}

TEST_CASE("llama: synthetic shapes, parameter counts and seeded weights") {
  // Hugging Face's counts for the real models (tied heads counted once).
  CHECK(llama::count_parameters(llama::synthetic_config("smollm2-135m")) == 134515008);
  CHECK(llama::count_parameters(llama::synthetic_config("llama-3.2-1b")) == 1235814400);
  CHECK_THROWS_WITH_AS(llama::synthetic_config("llama-huge"),
                       doctest::Contains("unknown synthetic Llama model"), Error);
  CHECK(llama::is_llama("synthetic:llama-tiny"));
  CHECK_FALSE(llama::is_llama("synthetic:tiny"));
  CHECK(llama::is_llama(fixture_dir("mha-untied")));

  Context ctx(2);
  const llama::Model a = llama::Model::open("synthetic:llama-tiny", ctx, 7);
  const llama::Model b = llama::Model::open("synthetic:llama-tiny", ctx, 7);
  const llama::Model c = llama::Model::open("synthetic:llama-tiny", ctx, 8);
  const Tensor& wa = a.weights().layers[1].qkv;
  CHECK(std::equal(wa.data<float>(), wa.data<float>() + wa.numel(),
                   b.weights().layers[1].qkv.data<float>()));
  CHECK_FALSE(std::equal(wa.data<float>(), wa.data<float>() + wa.numel(),
                         c.weights().layers[1].qkv.data<float>()));
  const std::vector<std::int32_t> prompt = {5, 9, 300, 17};
  const std::vector<std::int32_t> tokens = greedy(ctx, a, prompt, 4);
  CHECK(tokens.size() == 4);
  CHECK(a.weight_bytes() == static_cast<std::uint64_t>(a.parameter_count()) * 4);
}

TEST_CASE("llama: decoding token by token gives the logits of one prefill") {
  Context ctx(2);
  const llama::Model model = llama::Model::open(fixture_dir("gqa-tied-llama3"), ctx);
  const std::vector<std::int32_t> ids = {3, 50, 7, 99, 12, 64};
  const std::int64_t vocab = model.llama_config().vocab_size;
  KVCache full_cache = model.new_cache(ctx, 1, 6);
  const Tensor full = model.forward(ctx, ids, 1, full_cache, true);
  KVCache cache = model.new_cache(ctx, 1, 6);
  model.forward(ctx, {ids.data(), 3}, 1, cache);
  for (std::size_t t = 3; t < ids.size(); ++t) {
    const Tensor step = model.forward(ctx, {&ids[t], 1}, 1, cache);
    for (std::int64_t v = 0; v < vocab; ++v) {
      CHECK(step.data<float>()[v] ==
            doctest::Approx(full.data<float>()[static_cast<std::int64_t>(t) * vocab + v])
                .epsilon(1e-5));
    }
  }
}

TEST_CASE("llama: the loader refuses missing tensors and overflowing contexts") {
  Context ctx(2);
  const fs::path dir = fs::temp_directory_path() / "attnscope_llama_missing";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(fixture_dir("gqa-tied-llama3") + "/config.json", dir / "config.json");
  // The untied fixture's weights have no tied head but an lm_head, and 4 kv heads: a wrong shape.
  fs::copy_file(fixture_dir("mha-untied") + "/model.safetensors", dir / "model.safetensors");
  CHECK_THROWS_WITH_AS(llama::Model::open(dir.string(), ctx), doctest::Contains("expected shape"),
                       Error);
  fs::remove_all(dir);

  const llama::Model model = llama::Model::open(fixture_dir("mha-untied"), ctx);  // context 64
  CHECK_THROWS_AS(model.new_cache(ctx, 1, 65), Error);
  KVCache cache = model.new_cache(ctx, 1, 4);
  const std::vector<std::int32_t> five = {1, 2, 3, 4, 5};
  CHECK_THROWS_WITH_AS(model.forward(ctx, five, 1, cache), doctest::Contains("capacity"), Error);
  const std::vector<std::int32_t> outside = {128};
  CHECK_THROWS_WITH_AS(model.forward(ctx, outside, 1, cache), doctest::Contains("vocabulary"),
                       Error);
}
