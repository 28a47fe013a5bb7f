// GPT-2 end to end on the GPU (label gpu): Hugging Face parity on the committed fixtures in f32
// (logits and greedy tokens, every attention backend, CUDA graphs on and off) and in bf16 (close
// logits), graph and plain decode agreeing exactly, device memory holding the weights once, and
// the host-side checks still refusing bad ids. Every test skips loudly without a usable GPU.
//
// bf16 bounds: a numpy model of the bf16 forward pass (every weight, activation, score,
// probability and cache entry rounded where the GPU stores it, f32 arithmetic between) against
// the fixtures' f32 references gives per logit row an rms error of at most 2.8% of the row's rms
// and a largest error of at most 9.2% of it (tiny-b), while single logits near 0 are off by up
// to 0.18: so rows are compared at their own scale, with about twice those margins. Not so the
// two fixtures without the 1/sqrt(D) score scale (scale_attn_weights false): their sharper
// softmax amplifies bf16 rounding to 7.5% rms / 17.5% largest ("unscaled") and 9.5% / 28.9%
// ("unscaled-by-layer"; weights rounding alone gives it 6.1% rms), in the same model, which
// reproduces transformers within 2.3e-6 of a row's rms when nothing is rounded. They are
// compared in f32 only: the bf16 half checks the rounding on the other fixtures.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cuda_checks.h"
#include "cuda_model_checks.h"
#include "fixture_paths.h"
#include "hf_fixtures.h"
#include "model_checks.h"
#include "models/gpt2/model.h"
#include "ops/attention/registry.h"
#include "row_errors.h"
#include "runtime/cuda/device.h"
#include "runtime/error.h"
#include "runtime/sampler.h"
#include "runtime/transfer.h"

using namespace attnscope;

namespace {

using testing::check_greedy_equals_reference;
using testing::gpu_missing;
using testing::hf_fixture_dir;
using testing::host_logits;
using testing::kHfFixtures;
using testing::Prefill;
using testing::prefill_logits;
using testing::read_hf_reference;
using testing::reference_prefill;
using testing::RowErrors;
using testing::worst_relative_error;
using testing::worst_row_errors;

}  // namespace

TEST_CASE("GPU f32 logits match Hugging Face's for every backend; bf16 stays close") {
  if (gpu_missing()) return;
  for (const char* name : kHfFixtures) {
    const nlohmann::json reference = read_hf_reference(name);
    const Prefill prefill = reference_prefill(reference);
    const bool unscaled = std::string_view(name).starts_with("unscaled");
    for (const DType dtype : {DType::F32, DType::BF16}) {
      if (dtype == DType::BF16 && unscaled) continue;  // see the bounds at the top of the file
      Context ctx(Device::CUDA, 2);
      gpt2::Model model = gpt2::Model::open(hf_fixture_dir(name), ctx, 0, dtype);
      const std::int64_t vocab = model.config().vocab_size;
      for (const std::string& backend : ops::attention::backend_names()) {
        model.set_attention(backend);
        const Tensor logits = prefill_logits(ctx, model, prefill);
        REQUIRE(logits.shape() == Shape{prefill.batch, prefill.length, vocab});
        REQUIRE(logits.device() == Device::CUDA);
        const std::vector<float> actual = host_logits(ctx, logits);
        CAPTURE(name);
        CAPTURE(backend);
        CAPTURE(dtype_name(dtype));
        if (dtype == DType::F32) {
          const double worst = worst_relative_error(actual, reference["logits"], prefill.batch,
                                                    prefill.length, vocab);
          CHECK(worst < 1e-4);
        } else {
          // bf16 keeps 8 significant bits: see the bounds at the top of the file.
          const RowErrors worst =
              worst_row_errors(actual, reference["logits"], prefill.batch, prefill.length, vocab);
          CHECK(worst.rms < 0.06);
          CHECK(worst.largest < 0.2);
        }
      }
    }
  }
}

TEST_CASE("GPU f32 greedy continuations equal Hugging Face's, with and without CUDA graphs") {
  if (gpu_missing()) return;
  for (const char* name : kHfFixtures) {
    const nlohmann::json reference = read_hf_reference(name);
    Context ctx(Device::CUDA, 2);
    gpt2::Model model = gpt2::Model::open(hf_fixture_dir(name), ctx);
    StepRunner runner;
    for (const std::string& backend : ops::attention::backend_names()) {
      for (const bool graphs : {true, false}) {
        model.set_attention(backend);
        runner.set_cuda_graphs(graphs);
        CAPTURE(name);
        CAPTURE(backend);
        CAPTURE(graphs);
        check_greedy_equals_reference(ctx, model, runner, reference);
      }
    }
  }
}

TEST_CASE("a decode step gives the same logits as a graph and launched kernel by kernel") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 2);
  gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx, 5, DType::BF16);
  const std::vector<std::int32_t> prompt = {464, 2068, 7586, 21831};
  StepRunner runner;
  for (const std::string& backend : ops::attention::backend_names()) {
    model.set_attention(backend);
    std::vector<std::vector<float>> runs;
    for (const bool graphs : {false, true}) {
      runner.set_cuda_graphs(graphs);
      KVCache cache = model.new_cache(ctx, 2, 12);
      std::vector<std::int32_t> both = prompt;
      both.insert(both.end(), prompt.rbegin(), prompt.rend());
      model.forward(ctx, both, 2, cache, runner);
      std::vector<float> steps;
      const StepRunner::GraphCounts before = runner.graph_counts();
      for (std::int32_t token = 100; token < 106; ++token) {
        const std::vector<std::int32_t> next = {token, token + 1};
        const std::vector<float> logits =
            host_logits(ctx, model.forward(ctx, next, 2, cache, runner));
        steps.insert(steps.end(), logits.begin(), logits.end());
      }
      runs.push_back(steps);
      const StepRunner::GraphCounts after = runner.graph_counts();
      const std::int64_t replays = after.replays - before.replays;
      const std::int64_t graph_steps =
          after.instantiations + after.updates - before.instantiations - before.updates + replays;
      // Every decode step but the runner's very first (run eagerly to load its kernels) is a graph.
      const bool first_decode_of_model = backend == ops::attention::backend_names().front();
      CHECK(graph_steps == (graphs ? (first_decode_of_model ? 5 : 6) : 0));
      // Flash reads each row's key count from device memory: its graph is captured once and
      // replayed unchanged; the eager recipes size their GEMMs on the host: captured every step.
      const bool replayed = graphs && backend == "flash";
      CHECK(replays == (replayed ? 5 : 0));
      if (replayed) {
        CHECK(after.instantiations - before.instantiations == 1);
        CHECK(after.updates == before.updates);
      }
      // A graph's nodes are the step's launches: at least 8 for each of synthetic:tiny's 2 layers
      // (two norms, four projections, split_qkv, attention).
      if (graphs) CHECK(after.nodes >= 2 * 8);
    }
    // The same kernels with the same inputs: bit for bit. A mismatch says where and how large.
    REQUIRE(runs[0].size() == runs[1].size());
    std::size_t differing = 0, first_difference = runs[0].size();
    double largest_difference = 0.0;
    for (std::size_t i = 0; i < runs[0].size(); ++i) {
      if (runs[0][i] == runs[1][i]) continue;
      ++differing;
      first_difference = std::min(first_difference, i);
      largest_difference =
          std::max(largest_difference, std::fabs(static_cast<double>(runs[0][i]) - runs[1][i]));
    }
    CAPTURE(backend);
    CAPTURE(first_difference);
    CAPTURE(largest_difference);
    CHECK(differing == 0);
  }
}

TEST_CASE("a replayed decode step over a long cache's chunks, most of them empty, matches eager") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 2);
  // GPT-2's shape (1024 positions) in f32. Replayed, flash's split-KV cuts the cache's bound of
  // 1024 keys into chunks and each CTA cuts its row's few keys into as many ranges, most of them
  // empty; launched eagerly, the step attends to the row's own keys in one chunk. The two differ
  // in summation order only.
  gpt2::Model model = gpt2::Model::open("synthetic:gpt2", ctx, 7, DType::F32);
  model.set_attention("flash");
  const ModelConfig& config = model.config();
  const std::int64_t capacity = config.context_length;
  const ops::attention::Shape bound = {1,        config.n_heads,  config.n_kv_heads, 1,
                                       capacity, config.head_dim, DType::F32};
  // The partials are B Hq chunks Tq (D + 2) floats (flash.h): the chunk count of the bound.
  const std::size_t per_chunk =
      static_cast<std::size_t>(config.n_heads * (config.head_dim + 2)) * sizeof(float);
  const auto chunks = static_cast<std::int64_t>(
      ops::attention::find_backend("flash").cost_model(ctx, bound).temporary_bytes / per_chunk);
  CAPTURE(chunks);
  REQUIRE(chunks >= 4);                   // so the first steps (2 and 3 keys) leave chunks empty
  const std::int64_t steps = chunks + 4;  // and the last ones fill every chunk
  std::vector<std::vector<float>> runs;
  for (const bool graphs : {false, true}) {
    StepRunner runner(graphs);
    KVCache cache = model.new_cache(ctx, 1, capacity);
    std::vector<float> logits;
    for (std::int32_t token = 464; token < 464 + steps; ++token) {
      const std::vector<std::int32_t> next = {token};
      const std::vector<float> step = host_logits(ctx, model.forward(ctx, next, 1, cache, runner));
      logits.insert(logits.end(), step.begin(), step.end());
    }
    // The first step runs eagerly, the second is captured, every later one replayed.
    const StepRunner::GraphCounts counts = runner.graph_counts();
    CAPTURE(graphs);
    CHECK(counts.instantiations == (graphs ? 1 : 0));
    CHECK(counts.replays == (graphs ? steps - 2 : 0));
    runs.push_back(logits);
  }
  REQUIRE(runs[0].size() == runs[1].size());
  double worst = 0.0;
  for (std::size_t i = 0; i < runs[0].size(); ++i) {
    const double eager = runs[0][i], replayed = runs[1][i];
    worst = std::isnan(eager) || std::isnan(replayed)
                ? INFINITY
                : std::max(worst, std::fabs(replayed - eager) / std::max(std::fabs(eager), 1.0));
  }
  // f32 sums in another order: ~1e-7 per attention output, a few times that after 12 layers.
  CHECK(worst < 1e-4);
}

TEST_CASE("GPU weights are held once, in the asked dtype; bad ids are refused on the host") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 2);
  const gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx, 1, DType::BF16);
  // The tied LM head shares the embedding: the device holds each parameter once, 2 bytes each.
  const auto weight_bytes = static_cast<std::size_t>(model.parameter_count()) * 2;
  CHECK(ctx.allocator().current_bytes() == weight_bytes);
  CHECK(model.weights().lm_head.raw_data() == model.weights().token_embedding.raw_data());
  CHECK(model.weights().token_embedding.dtype() == DType::BF16);
  CHECK(model.weights().token_embedding.device() == Device::CUDA);

  KVCache cache = model.new_cache(ctx, 1, 4);
  const std::vector<std::int32_t> bad = {1, 50257};
  CHECK_THROWS_WITH_AS(model.forward(ctx, bad, 1, cache),
                       doctest::Contains("outside the vocabulary"), Error);
  const std::vector<std::int32_t> good = {1, 2};
  CHECK(model.forward(ctx, good, 1, cache).dtype() == DType::F32);
}

TEST_CASE("a 16-bit CPU model narrows its weights only; without a GPU --device cuda fails") {
  Context cpu(1);
  const gpt2::Model model = gpt2::Model::open("synthetic:tiny", cpu, 0, DType::BF16);
  CHECK(model.weight_dtype() == DType::BF16);
  CHECK(model.activation_dtype() == DType::F32);
  CHECK(model.weights().layers[0].attn_qkv_weight.dtype() == DType::BF16);
  CHECK(model.weights().layers[0].attn_qkv_bias.dtype() == DType::F32);
  if (gpu::unavailable_reason().empty()) {
    MESSAGE("a GPU is usable here: the refusal is not exercised");
    return;
  }
  CHECK_THROWS_WITH_AS(Context(Device::CUDA, 1), doctest::Contains("--device cuda"), Error);
}
