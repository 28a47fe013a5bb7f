// Llama end to end on the GPU (label gpu): transformers parity on the committed fixtures in f32
// (logits of a prefill and of decode steps behind a filled cache within the bound of
// tests/llama_fixtures.h, greedy tokens; CUDA graphs on and off, every attention backend), and
// in bf16 (prefill and decode logits close to transformers' f32 ones, rows compared at their own
// scale, within about twice what tools/fixtures/llama_bf16_error_model.py models for the bf16
// forward pass: the derivation is at the bf16 test). Every test skips loudly without a usable GPU.
#include <doctest/doctest.h>

#include <cmath>

#include "cuda_checks.h"
#include "cuda_model_checks.h"
#include "llama_fixtures.h"
#include "model_checks.h"
#include "models/llama/model.h"
#include "row_errors.h"
#include "runtime/cuda/device.h"
#include "runtime/error.h"
#include "runtime/sampler.h"
#include "runtime/transfer.h"

using namespace attnscope;

namespace {

using testing::check_greedy_equals_reference;
using testing::fixture_dir;
using testing::gpu_missing;
using testing::host_logits;
using testing::kLlamaFixtures;
using testing::logit_bound;
using testing::Prefill;
using testing::prefill_logits;
using testing::read_reference;
using testing::reference_prefill;
using testing::RowErrors;
using testing::worst_relative_error;
using testing::worst_row_errors;

// Checks the worst logit row of a bf16 run against transformers' f32 logits: an rms error under
// 7.5% and a largest error under 20% of the row's rms, about twice the modelled worst (the
// derivation is at the bf16 prefill test). Decode rows are held to the same bounds.
void check_bf16_rows(const RowErrors& worst) {
  CAPTURE(worst.rms);
  CAPTURE(worst.largest);
  CHECK(worst.rms < 0.075);
  CHECK(worst.largest < 0.2);
}

}  // namespace

TEST_CASE("GPU llama: f32 logits match transformers' within the derived bound, every backend") {
  if (gpu_missing()) return;
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    Context ctx(Device::CUDA, 2);
    llama::Model model = llama::Model::open(fixture_dir(name), ctx);
    const Prefill prefill = reference_prefill(reference);
    const std::int64_t vocab = model.llama_config().vocab_size;
    const double bound = logit_bound(model.llama_config(), prefill.length);
    for (const std::string& backend : ops::attention::backend_names()) {
      model.set_attention(backend);
      const double worst =
          worst_relative_error(host_logits(ctx, prefill_logits(ctx, model, prefill)),
                               reference["logits"], prefill.batch, prefill.length, vocab);
      CAPTURE(name);
      CAPTURE(backend);
      CAPTURE(worst);
      CHECK(worst <= bound);
    }
  }
}

TEST_CASE("GPU llama: bf16 logits stay close to transformers' f32, every backend") {
  // The bound is derived, not tuned. tools/fixtures/llama_bf16_error_model.py runs this forward
  // pass in torch f32 on the CPU and rounds to bf16 exactly where the GPU stores a value: every
  // weight (the RMSNorm gains too); each RMSNorm's normalised row and its product with the gain;
  // the qkv and gate_up projections (Qwen2's biases added before the rounding); Qwen3's q and k
  // head norms; q and k after RoPE (k as the cache holds it, v as projected); the residual
  // stream after o_proj and down_proj (a GEMM with the add in it, rounded once); silu(gate) and its
  // product with up; and in attention what each backend stores: naive and inplace the scores, the
  // scaled scores and P, fused the scores and P, math and flash (its SIMT kernel at these head dims
  // of 8 and 16) the output only. The logits are f32. Against the fixtures' f32 references it
  // gives, in the worst logit row (always one of gqa1-untied-sharded), an rms error of 3.6% of the
  // row's rms (math/flash 3.65%, naive/inplace 3.59%, fused 3.51%) and a largest error of 10.1% of
  // it (naive/inplace 10.14%, fused 10.12%, math/flash 9.05%); rounding nothing, it reproduces the
  // references within 3.0e-6 of a row's rms. What it does not mirror is the GPU's f32 order of
  // operations (cuBLAS's summation order, exp, FMAs), which moves values by f32 ulps and so flips a
  // rare bf16 rounding: accumulating the model's products in f64 instead left its worst numbers
  // unchanged in 4 digits. The bounds are about twice the modeled worst: 7.5% and 20% of the row's
  // rms. wide-heads-bf16 loads unchanged (its weights are bf16 already); wide-heads-f16's f16
  // weights are rounded to bf16 at load, which the model does too: neither needs anything else.
  if (gpu_missing()) return;
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    Context ctx(Device::CUDA, 2);
    llama::Model model = llama::Model::open(fixture_dir(name), ctx, 0, DType::BF16);
    REQUIRE(model.activation_dtype() == DType::BF16);
    const Prefill prefill = reference_prefill(reference);
    const std::int64_t vocab = model.llama_config().vocab_size;
    for (const std::string& backend : ops::attention::backend_names()) {
      model.set_attention(backend);
      const Tensor logits = prefill_logits(ctx, model, prefill);
      REQUIRE(logits.dtype() == DType::F32);
      CAPTURE(name);
      CAPTURE(backend);
      check_bf16_rows(worst_row_errors(host_logits(ctx, logits), reference["logits"], prefill.batch,
                                       prefill.length, vocab));
    }
  }
}

TEST_CASE("GPU llama: greedy tokens equal transformers', CUDA graphs on and off") {
  if (gpu_missing()) return;
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    Context ctx(Device::CUDA, 2);
    llama::Model model = llama::Model::open(fixture_dir(name), ctx);
    for (const std::string& backend : ops::attention::backend_names()) {
      model.set_attention(backend);
      for (const bool graphs : {false, true}) {
        StepRunner runner(graphs);
        CAPTURE(name);
        CAPTURE(backend);
        CAPTURE(graphs);
        check_greedy_equals_reference(ctx, model, runner, reference);
      }
    }
  }
}

TEST_CASE(
    "GPU llama: decode steps behind a filled cache match transformers' logits, graphs on/off") {
  // Row 0 of the reference input: its first half as one prefill, then one token per step, each
  // step's logits against transformers' for that position. This is the path generate takes:
  // rotary positions and split_qkv at a cache offset, decode attention, graph replay. In f32
  // within the bound of every logit; in bf16 within the prefill test's row bounds: a decode row
  // is rounded where the same row of a prefill is (the cache holds k and v as the prefill left
  // them; eager backends round their scores and P alike; flash's split-KV rounds its output
  // only, as its SIMT kernel does at these head dims), so the modelled worst row covers it.
  if (gpu_missing()) return;
  for (const char* name : kLlamaFixtures) {
    const nlohmann::json reference = read_reference(name);
    const auto ids = reference["input_ids"][0].get<std::vector<std::int32_t>>();
    const auto length = static_cast<std::int64_t>(ids.size());
    const std::int64_t prefill = length / 2;
    // transformers' logits of the decoded positions, as rows of one sequence [1][steps][vocab]:
    // decoded step s is position prefill + s.
    nlohmann::json decoded_reference = nlohmann::json::array({nlohmann::json::array()});
    for (std::int64_t t = prefill; t < length; ++t) {
      decoded_reference[0].push_back(reference["logits"][0][t]);
    }
    for (const DType dtype : {DType::F32, DType::BF16}) {
      Context ctx(Device::CUDA, 2);
      llama::Model model = llama::Model::open(fixture_dir(name), ctx, 0, dtype);
      const std::int64_t vocab = model.llama_config().vocab_size;
      const double bound = logit_bound(model.llama_config(), length);
      for (const std::string& backend : ops::attention::backend_names()) {
        model.set_attention(backend);
        for (const bool graphs : {false, true}) {
          StepRunner runner(graphs);
          KVCache cache = model.new_cache(ctx, 1, length);
          model.forward(ctx, {ids.data(), static_cast<std::size_t>(prefill)}, 1, cache, runner);
          std::vector<float> decoded;
          for (std::int64_t t = prefill; t < length; ++t) {
            const std::vector<float> logits =
                host_logits(ctx, model.forward(ctx, {&ids[t], 1}, 1, cache, runner));
            decoded.insert(decoded.end(), logits.begin(), logits.end());
          }
          CAPTURE(name);
          CAPTURE(dtype_name(dtype));
          CAPTURE(backend);
          CAPTURE(graphs);
          if (dtype == DType::F32) {
            const double worst =
                worst_relative_error(decoded, decoded_reference, 1, length - prefill, vocab);
            CAPTURE(worst);
            CHECK(worst <= bound);
          } else {
            check_bf16_rows(
                worst_row_errors(decoded, decoded_reference, 1, length - prefill, vocab));
          }
        }
      }
    }
  }
}
