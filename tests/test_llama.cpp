// Llama end to end: Hugging Face parity on committed fixtures made by transformers'
// LlamaForCausalLM (tools/fixtures/make_hf_llama_fixtures.py: grouped-query attention on and
// off, tied and untied heads, llama3 rope scaling, a sharded checkpoint), logits and greedy
// tokens for every attention backend; the synthetic shapes; the loader's refusals.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture_paths.h"
#include "llama_fixtures.h"
#include "model_checks.h"
#include "models/llama/model.h"
#include "ops/cpu/output_blocks.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "safetensors_writer.h"

using namespace attnscope;
namespace fs = std::filesystem;

// The fixtures and the checks shared with the other model suites (llama_fixtures.h,
// model_checks.h).
using namespace attnscope::testing;

namespace {

// The f32 parity bound of a fixture's prefill in absolute terms: logit_bound is relative to
// max(|logit|, 1), so it is scaled by the largest such value among the reference logits.
double absolute_parity_bound(const llama::LlamaConfig& config, const nlohmann::json& reference) {
  double scale = 1.0;
  for (double z : reference_logits(reference)) scale = std::max(scale, std::fabs(z));
  return logit_bound(config, static_cast<std::int64_t>(reference["input_ids"][0].size())) * scale;
}

// wide-heads with every matrix (every rank-2 tensor, all stored [out, in]) holding the values
// q8_0 stores for it (testing::write_q8_0_dequantized).
std::string write_dequantized_wide_heads(const testing::TempDir& dir) {
  return testing::write_q8_0_dequantized(
      dir, fixture_dir("wide-heads"), [](const SafetensorsEntry& e) {
        return e.shape.size() == 2 ? testing::StoredMatrix::OutIn : testing::StoredMatrix::No;
      });
}

}  // namespace

TEST_CASE("llama: logits match transformers' within the derived bound for every backend") {
  for_each_fixture_and_backend<llama::Model>(
      kLlamaFixtures, fixture_dir, read_reference,
      [](Context& ctx, const llama::Model& model, const nlohmann::json& reference) {
        const double bound = logit_bound(model.llama_config(), reference_prefill(reference).length);
        const double worst = prefill_relative_error(ctx, model, reference);
        CAPTURE(worst);
        CHECK(worst <= bound);
      });
}

TEST_CASE("llama: greedy continuations equal transformers' for every backend") {
  for_each_fixture_and_backend<llama::Model>(
      kLlamaFixtures, fixture_dir, read_reference,
      [](Context& ctx, const llama::Model& model, const nlohmann::json& reference) {
        // Every greedy step's top-1 lead exceeds twice the logit bound: no rounding difference
        // within the bound can change a token (the fixtures are made so; checked here).
        const double margin = reference["greedy_min_margin"].get<double>();
        REQUIRE(margin > 2.0 * logit_bound(model.llama_config(), 16));
        check_greedy_equals_reference(ctx, model, reference);
      });
}

TEST_CASE("llama: 16-bit weights on the cpu: checkpoints stored in bf16/f16 match transformers") {
  // wide-heads-bf16 and wide-heads-f16 hold weights already rounded to their dtype, and
  // transformers computed their logits in f32 from them. Loading them at that --dtype narrows
  // nothing (every stored value is representable), so the 16-bit kernels compute the same f32
  // math: only the order of f32 additions differs, as in the f32 parity test (same bound).
  for_each_stored_16bit_fixture<llama::Model>(
      "wide-heads", fixture_dir, read_reference,
      [](Context& ctx, const llama::Model& model, const nlohmann::json& reference, DType dtype) {
        const auto length = static_cast<std::int64_t>(reference["input_ids"][0].size());
        REQUIRE(model.weights().layers[0].gate_up.dtype() == dtype);
        CHECK(max_relative_difference(all_logits(ctx, model, reference),
                                      reference_logits(reference)) <=
              logit_bound(model.llama_config(), length));
        check_greedy_equals_reference(ctx, model, reference);
      });
}

TEST_CASE("llama: 16-bit weights on the cpu: an f32 checkpoint narrowed at load stays near") {
  // The bound, argued as GPT-2's (tests/test_gpt2.cpp). wide-heads-X is wide-heads with every
  // parameter rounded to X, with transformers' f32 logits of those weights, so
  //   D = max |logits(wide-heads-X) - logits(wide-heads)|
  // is the logit change transformers itself measures for rounding this model's weights to X.
  // attnscope narrows a subset of those parameters (the matrices and the embedding; the RMSNorm
  // gains stay f32), each with the same relative error (<= 2^-8 bf16, 2^-11 f16). To first
  // order a logit moves by a sum of per-weight contributions, and a subset of the terms can
  // exceed the whole sum only through cancellation among the rest: we allow twice D, plus the
  // f32 parity bound twice (attnscope's rounding and transformers' each within it). Greedy
  // tokens must then equal transformers' f32 ones when every step's top-1 margin exceeds
  // 2 x bound: no logit can then overtake the top one.
  check_narrowed_at_load<llama::Model>("wide-heads", fixture_dir, read_reference,
                                       [](double transformers_change, const llama::Model& model,
                                          const nlohmann::json& f32_reference) {
                                         return 2.0 * transformers_change +
                                                2.0 * absolute_parity_bound(model.llama_config(),
                                                                            f32_reference);
                                       });
}

TEST_CASE("llama: q8_0 weights on the cpu: prefill computes the f32 model of dequantized weights") {
  // As for GPT-2: prefill (from gemm_min_rows rows on, at most 128: 2 x 64 ids) keeps the
  // activations in f32 and multiplies by dequantized weight panels, and dequantizing is exact,
  // so the q8_0 model must give the logits of the f32 model whose matrices (every rank-2 tensor
  // of the checkpoint, all stored [out, in]) hold the dequantized values, up to f32 summation
  // order (the parity bound); at avx512vnni x is quantized as in decode
  // (testing::check_narrow_weights_prefill).
  testing::TempDir dir;
  const std::string dequantized = write_dequantized_wide_heads(dir);
  Context ctx(2);
  const llama::Model q8 = llama::Model::open(fixture_dir("wide-heads"), ctx, 0, DType::Q8_0);
  const llama::Model f32 = llama::Model::open(dequantized, ctx, 0, DType::F32);
  CHECK(q8.dtype_summary() == "q8_0 weights, f32 activations");
  const Prefill prefill = patterned_prefill(2, q8.config().context_length, q8.config().vocab_size);
  REQUIRE(prefill.batch * prefill.length >= ops::cpu::gemm_min_rows(cpu_level(), DType::Q8_0));
  const llama::Model original = llama::Model::open(fixture_dir("wide-heads"), ctx, 0, DType::F32);
  check_narrow_weights_prefill(all_logits(ctx, q8, prefill), all_logits(ctx, f32, prefill),
                               all_logits(ctx, original, prefill),
                               logit_bound(q8.llama_config(), prefill.length),
                               ops::cpu::q8_0_prefill_quantizes_x(cpu_level()));
}

TEST_CASE("llama: bf16 weights on the cpu: prefill computes the f32 model of the same weights") {
  // As for GPT-2: wide-heads-bf16 at --dtype bf16 gives the logits of the same checkpoint at f32
  // within the parity bound where prefill keeps x in f32; at avx512bf16 and amx it rounds x to
  // bf16 (testing::check_narrow_weights_prefill).
  check_bf16_prefill<llama::Model>("wide-heads", fixture_dir,
                                   [](const llama::Model& model, const Prefill& prefill) {
                                     return logit_bound(model.llama_config(), prefill.length);
                                   });
}

TEST_CASE("llama: q8_0 weights on the cpu: decode stays near the f32 logits and tokens") {
  // The bound, as GPT-2's. Prefill's change D = max |logits(q8_0 prefill) - logits(f32)| is the
  // effect of the weights' quantization alone (test above). Decode (one row) also quantizes each
  // linear's input in blocks of 32, with the same error model as the weights: one more
  // perturbation per product of the same per-block relative size. To first order the logit
  // change is the sum of both contributions; allowing twice each for cancellation, plus the f32
  // parity bound twice (as in the 16-bit test): bound = 2 (D + D) + 2 parity. Greedy tokens must
  // equal transformers' f32 ones when every step's top-1 margin exceeds 2 x bound.
  testing::TempDir dir;
  check_q8_0_decode<llama::Model>(
      "wide-heads", fixture_dir, read_reference, write_dequantized_wide_heads(dir),
      [](double weights_change, const llama::Model& model, const nlohmann::json& reference) {
        return 4.0 * weights_change + 2.0 * absolute_parity_bound(model.llama_config(), reference);
      });
}

TEST_CASE("model families: the spec or config.json names one, or one clear error says why not") {
  CHECK_THROWS_WITH_AS(
      model_family("synthetic:llama-huge"),
      "--model: unknown synthetic model 'llama-huge' (valid: gpt2, gpt2-medium, gpt2-large, "
      "gpt2-xl, tiny, llama-tiny, smollm2-135m, llama-3.2-1b, qwen2.5-0.5b, qwen3-0.6b)",
      Error);
  CHECK_THROWS_WITH_AS(model_family("gpt2"),
                       doctest::Contains("gpt2: no such file or directory (--model takes a Hugging "
                                         "Face checkpoint folder, which `python3 "
                                         "weights/download.py` fetches, or a built-in shape"),
                       Error);
  testing::TempDir dir;
  const auto config_says = [&](const std::string& text) {
    std::ofstream(dir.file("config.json"), std::ios::binary | std::ios::trunc) << text;
    return model_family(dir.path().string());
  };
  const std::string config = dir.file("config.json");
  CHECK(config_says(R"({"model_type": "gpt2", "n_layer": 1})") == ModelFamily::Gpt2);
  CHECK(config_says(R"({"n_layer": 1})") == ModelFamily::Gpt2);  // old GPT-2 configs
  CHECK(config_says(R"({"model_type": "llama"})") == ModelFamily::Llama);
  CHECK(config_says(R"({"model_type": "mistral"})") == ModelFamily::Llama);
  CHECK(config_says(R"({"model_type": "qwen2"})") == ModelFamily::Llama);
  CHECK(config_says(R"({"model_type": "qwen3"})") == ModelFamily::Llama);
  CHECK_THROWS_WITH_AS(
      config_says(R"({"model_type": "gemma"})"),
      (config + ": unsupported model_type 'gemma' (supported: gpt2, llama, mistral, qwen2, qwen3)")
          .c_str(),
      Error);
  CHECK_THROWS_WITH_AS(config_says(R"({"model_type": ["llama"]})"),
                       (config + ": model_type must be a string, found [\"llama\"]").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(config_says("[" + std::string(100000, '[')),
                       (config + ": nests objects and arrays deeper than 64 levels").c_str(),
                       Error);
  // Read through the one opener: a FIFO is refused at once, a huge file before it is parsed.
  std::filesystem::remove(config);
  REQUIRE(::mkfifo(config.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(model_family(dir.path().string()), (config + ": not a regular file").c_str(),
                       Error);
  std::filesystem::remove(config);
  std::ofstream(config, std::ios::binary) << "{}";
  std::filesystem::resize_file(config, std::uint64_t{64} << 20);
  CHECK_THROWS_WITH_AS(model_family(dir.path().string()),
                       doctest::Contains("over the 16 MiB limit"), Error);
}

TEST_CASE("llama: synthetic shapes, parameter counts and seeded weights") {
  // Hugging Face's counts for the real models (tied heads counted once).
  CHECK(llama::count_parameters(llama::synthetic_config("smollm2-135m")) == 134515008);
  CHECK(llama::count_parameters(llama::synthetic_config("llama-3.2-1b")) == 1235814400);
  CHECK(llama::count_parameters(llama::synthetic_config("qwen2.5-0.5b")) == 494032768);
  CHECK(llama::count_parameters(llama::synthetic_config("qwen3-0.6b")) == 596049920);
  CHECK_THROWS_WITH_AS(llama::synthetic_config("llama-huge"),
                       doctest::Contains("unknown synthetic Llama model"), Error);
  CHECK(model_family("synthetic:llama-tiny") == ModelFamily::Llama);
  CHECK(model_family("synthetic:tiny") == ModelFamily::Gpt2);
  CHECK(model_family(fixture_dir("mha-untied")) == ModelFamily::Llama);

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

TEST_CASE("llama: the loader refuses missing tensors, q8_0 rows of part blocks, long contexts") {
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

  // q8_0 blocks of 32 along every row: the fixtures' MLP is 48 wide (wide-heads' is 64).
  CHECK_THROWS_WITH_AS(llama::Model::open(fixture_dir("gqa-tied-llama3"), ctx, 0, DType::Q8_0),
                       doctest::Contains("intermediate_size is 48"), Error);

  const llama::Model model = llama::Model::open(fixture_dir("mha-untied"), ctx);  // context 64
  CHECK_THROWS_AS(model.new_cache(ctx, 1, 65), Error);
  KVCache cache = model.new_cache(ctx, 1, 4);
  const std::vector<std::int32_t> five = {1, 2, 3, 4, 5};
  CHECK_THROWS_WITH_AS(model.forward(ctx, five, 1, cache), doctest::Contains("capacity"), Error);
  const std::vector<std::int32_t> outside = {128};
  CHECK_THROWS_WITH_AS(model.forward(ctx, outside, 1, cache), doctest::Contains("vocabulary"),
                       Error);
}

// Mistral (MistralForCausalLM) is Llama's blocks with a sliding window: transformers' modeling
// code for it is Llama's but for the window's mask, so within the window its logits are the
// Llama fixture's. mha-untied's config as Mistral's with a window as long as its context runs
// as transformers' reference; a window shorter than the context becomes the context.
TEST_CASE("mistral: a sliding window as long as the sequence is Llama's causal attention") {
  const testing::TempDir dir;
  const auto write_mistral = [&](std::int64_t window) {
    fs::copy_file(fixture_dir("mha-untied") + "/model.safetensors",
                  dir.path() / "model.safetensors", fs::copy_options::overwrite_existing);
    nlohmann::json config;
    std::ifstream(fixture_dir("mha-untied") + "/config.json") >> config;
    config["model_type"] = "mistral";
    config["architectures"] = {"MistralForCausalLM"};
    config["sliding_window"] = window;
    testing::write_file(dir.file("config.json"), config.dump());
  };
  const nlohmann::json reference = read_reference("mha-untied");
  Context ctx(2);
  write_mistral(64);
  const llama::Model model = llama::Model::open(dir.path().string(), ctx);
  CHECK(model.config().model_type == "mistral");
  CHECK(model.config().context_length == 64);
  CHECK(prefill_relative_error(ctx, model, reference) <=
        logit_bound(model.llama_config(), reference_prefill(reference).length));
  check_greedy_equals_reference(ctx, model, reference);

  write_mistral(8);
  const llama::Model windowed = llama::Model::open(dir.path().string(), ctx);
  CHECK(windowed.config().context_length == 8);
  CHECK_THROWS_AS(windowed.new_cache(ctx, 1, 9), Error);
}
