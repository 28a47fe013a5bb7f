// GPT-2 end to end: Hugging Face parity on committed fixtures (logits and greedy tokens, for
// every attention backend and every stored dtype), KV-cache and batch consistency, synthetic
// models, and the loader's refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture_paths.h"
#include "hf_fixtures.h"
#include "model_checks.h"
#include "models/gpt2/model.h"
#include "models/gpt2/tensor_map.h"
#include "ops/attention/registry.h"
#include "ops/cpu/output_blocks.h"
#include "reference_ops.h"
#include "runtime/attention_tap.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "safetensors_writer.h"

using namespace attnscope;
namespace fs = std::filesystem;

// The fixtures and the checks shared with the other model suites (hf_fixtures.h, model_checks.h).
using namespace attnscope::testing;

TEST_CASE("logits match Hugging Face's within 1e-4 for every backend and stored dtype") {
  for_each_fixture_and_backend<gpt2::Model>(
      kHfFixtures, hf_fixture_dir, read_hf_reference,
      [](Context& ctx, const gpt2::Model& model, const nlohmann::json& reference) {
        CHECK(prefill_relative_error(ctx, model, reference) < 1e-4);
      });
}

TEST_CASE("greedy continuations equal Hugging Face's for every backend") {
  for_each_fixture_and_backend<gpt2::Model>(
      kHfFixtures, hf_fixture_dir, read_hf_reference,
      [](Context& ctx, const gpt2::Model& model, const nlohmann::json& reference) {
        check_greedy_equals_reference(ctx, model, reference);
      });
}

TEST_CASE("16-bit weights on the cpu: checkpoints stored in bf16/f16 match transformers exactly") {
  // tiny-a-bf16 and tiny-a-f16 hold weights already rounded to their dtype, and transformers
  // computed their logits in f32 from them. Loading them at that --dtype narrows nothing (every
  // stored value is representable), so attnscope's 16-bit kernels compute the same f32 math:
  // only the order of f32 additions differs, as in the f32 parity test (same 1e-4 bound).
  for_each_stored_16bit_fixture<gpt2::Model>(
      "tiny-a", hf_fixture_dir, read_hf_reference,
      [](Context& ctx, const gpt2::Model& model, const nlohmann::json& reference, DType dtype) {
        REQUIRE(model.weights().layers[0].mlp_up_weight.dtype() == dtype);
        CHECK(max_relative_difference(all_logits(ctx, model, reference),
                                      reference_logits(reference)) < 1e-4);
        check_greedy_equals_reference(ctx, model, reference);
      });
}

TEST_CASE("16-bit weights on the cpu: an f32 checkpoint narrowed at load stays near its logits") {
  // The bound. tiny-a-bf16 / tiny-a-f16 are tiny-a with every parameter rounded to the dtype,
  // and their references are transformers' f32 logits of those rounded weights, so
  //   D = max |logits(tiny-a-X) - logits(tiny-a)|
  // is the logit change transformers itself measures for rounding this model's weights to X.
  // attnscope narrows a subset of those parameters (the matrices; biases, layer norms and the
  // position embedding stay f32), each with the same relative error (<= 2^-8 bf16, 2^-11 f16).
  // To first order a logit moves by a sum of per-weight contributions, and a subset of the terms
  // can exceed the whole sum only through cancellation among the rest; we allow twice D for it,
  // plus the 1e-4 relative f32 parity slack (logits here are below 10 in magnitude: 1e-3).
  // Greedy tokens must then equal transformers' f32 ones when every step's top-1 margin
  // (greedy_min_margin) exceeds 2 x bound: no logit can then overtake the top one.
  check_narrowed_at_load<gpt2::Model>(
      "tiny-a", hf_fixture_dir, read_hf_reference,
      [](double transformers_change, const gpt2::Model&, const nlohmann::json&) {
        return 2.0 * transformers_change + 1e-3;
      });
}

namespace {

// tiny-a rewritten with the values q8_0 stores for its matrices: the Conv1D weights (stored
// [in, out], so quantized along their columns) and the token embedding (tied to the LM head).
std::string write_dequantized_tiny_a(const testing::TempDir& dir) {
  return testing::write_q8_0_dequantized(
      dir, hf_fixture_dir("tiny-a"), [](const SafetensorsEntry& e) {
        const bool conv1d = e.name.ends_with("c_attn.weight") ||
                            e.name.ends_with("c_proj.weight") || e.name.ends_with("c_fc.weight");
        if (conv1d) return testing::StoredMatrix::InOut;
        return e.name.ends_with("wte.weight") ? testing::StoredMatrix::OutIn
                                              : testing::StoredMatrix::No;
      });
}

}  // namespace

TEST_CASE("q8_0 weights on the cpu: prefill computes the f32 model of the dequantized weights") {
  // Prefill (from gemm_min_rows rows on, ops/cpu/output_blocks.h: at most 128, so 2 x 64 ids)
  // keeps the activations in f32 and multiplies by dequantized weight panels
  // (ops/cpu/linear_q8_0.h), and dequantizing is exact: the q8_0 model must give the logits of
  // the f32 model whose matrices hold those dequantized values, up to f32 summation order (the
  // 1e-4 relative parity bound of the test above). At the amx level the tiles keep 16 bits of
  // x and of the weights (ops/cpu/gemm_amx.cpp: up to 2^-16 (3 + 2^-7) sum |x w| per output,
  // where f32 adds 2^-24 per term); measured 1.6e-4 here, bounded by 1e-3 (dropping the
  // weights' low parts, 2^-9 per weight, exceeds it). At avx512vnni x is quantized as in decode
  // (testing::check_narrow_weights_prefill says what is checked then).
  testing::TempDir dir;
  const std::string dequantized = write_dequantized_tiny_a(dir);
  Context ctx(2);
  const gpt2::Model q8 = gpt2::Model::open(hf_fixture_dir("tiny-a"), ctx, 0, DType::Q8_0);
  const gpt2::Model f32 = gpt2::Model::open(dequantized, ctx, 0, DType::F32);
  CHECK(q8.dtype_summary() == "q8_0 weights, f32 activations");
  const Prefill prefill = patterned_prefill(2, q8.config().context_length, q8.config().vocab_size);
  REQUIRE(prefill.batch * prefill.length >= ops::cpu::gemm_min_rows(cpu_level(), DType::Q8_0));
  const gpt2::Model original = gpt2::Model::open(hf_fixture_dir("tiny-a"), ctx, 0, DType::F32);
  check_narrow_weights_prefill(all_logits(ctx, q8, prefill), all_logits(ctx, f32, prefill),
                               all_logits(ctx, original, prefill),
                               cpu_level() >= CpuLevel::Amx ? 1e-3 : 1e-4,
                               ops::cpu::q8_0_prefill_quantizes_x(cpu_level()));
}

TEST_CASE("bf16 weights on the cpu: prefill computes the f32 model of the same weights") {
  // As with q8_0: prefill (from gemm_min_rows rows on: at most 128, so 2 x 64 ids) widens the
  // stored bf16 weights exactly and keeps x in f32 below the avx512bf16 level, so tiny-a-bf16 at
  // --dtype bf16 gives the logits of the same checkpoint at f32 within the parity bound. At
  // avx512bf16 and amx x is rounded to bf16 for vdpbf16ps or AMX's tiles
  // (ops/cpu/output_blocks.h: bf16_linear_rounds_x), a perturbation of the size the weights'
  // rounding makes (testing::check_narrow_weights_prefill).
  check_bf16_prefill<gpt2::Model>("tiny-a", hf_fixture_dir,
                                  [](const gpt2::Model&, const Prefill&) { return 1e-4; });
}

TEST_CASE("a bf16 model's attention calls let flash round to bf16, on AMX tiles at the amx level") {
  // LanguageModel::attention_shape says which calls may round their operands (bf16 weights only),
  // and forward() calls the backend so: layer 0's flash output in a 64-token prefill of GPT-2's
  // shape (head dim 64) is flash's on the same q, k and v with that leave, bit for bit; at the amx
  // level it differs from flash's without (tests/test_flash.cpp bounds by how much).
  struct FirstLayer final : AttentionTap {
    Tensor q, k, v, out;  // handles: the buffers stay as the call left them
    std::int64_t kv_len = 0;
    float scale = 1.0f;
    void attention(Context& /*ctx*/, const Call& call) override {
      if (call.layer != 0) return;
      q = call.q, k = call.k, v = call.v, out = call.out;
      kv_len = call.kv_len;
      scale = call.scale;
    }
  };
  Context ctx(2);
  const std::vector<std::int32_t> prompt(64, 11);
  for (DType dtype : {DType::F32, DType::BF16}) {
    CAPTURE(dtype_name(dtype));
    gpt2::Model model = gpt2::Model::open("synthetic:gpt2", ctx, 0, dtype);
    model.set_attention("flash");
    const bool rounds = dtype == DType::BF16;
    CHECK(model.attention_shape(1, 64, 64).bf16_products == rounds);
    KVCache cache = model.new_cache(ctx, 1, 64);
    FirstLayer tap;
    ctx.set_attention_tap(&tap);
    model.forward(ctx, prompt, 1, cache);
    ctx.set_attention_tap(nullptr);
    REQUIRE(tap.q.defined());
    const ops::attention::Backend& flash = ops::attention::find_backend("flash");
    std::vector<double> out_of[2];  // without and with the leave
    for (bool leave : {false, true}) {
      ops::attention::Call call{.q = tap.q,
                                .k = tap.k,
                                .v = tap.v,
                                .out = Tensor::empty(tap.q.shape(), DType::F32, ctx.allocator()),
                                .kv_len = tap.kv_len,
                                .scale = tap.scale,
                                .kv_lens = {},
                                .bf16_products = leave};
      flash.attend(ctx, call);
      out_of[leave ? 1 : 0] = to_double(call.out);
    }
    const std::vector<double> model_out = to_double(tap.out);
    CHECK(model_out == out_of[rounds ? 1 : 0]);
    CHECK((out_of[0] != out_of[1]) == (cpu_level() == CpuLevel::Amx));
  }
}

TEST_CASE("q8_0 weights on the cpu: decode stays near the f32 logits and tokens") {
  // The bound. Prefill's change D = max |logits(q8_0 prefill) - logits(f32)| is the effect of
  // the weights' quantization alone (test above). Decode (one row) also quantizes each linear's
  // input in blocks of 32 (ops/cpu/linear_q8_0.h), with the same error model as the weights
  // (each value within d/2 of the truth, d = block max / 127): one more perturbation per product
  // of the same per-block relative size. To first order the logit change is the sum of both
  // contributions; as in the 16-bit test we allow twice each for cancellation among the terms:
  // bound = 2 (D + D) + 1e-3 (f32 parity slack, logits below 10 here). Greedy tokens must equal
  // transformers' f32 ones when every step's top-1 margin exceeds 2 x bound.
  testing::TempDir dir;
  check_q8_0_decode<gpt2::Model>("tiny-a", hf_fixture_dir, read_hf_reference,
                                 write_dequantized_tiny_a(dir),
                                 [](double weights_change, const gpt2::Model&,
                                    const nlohmann::json&) { return 4.0 * weights_change + 1e-3; });
}

TEST_CASE("q8_0 needs rows of whole blocks and the cpu") {
  Context ctx(1);
  // tiny-b's MLP is 200 wide (n_inner): mlp.c_proj's rows cannot be cut into blocks of 32.
  CHECK_THROWS_WITH_AS(gpt2::Model::open(hf_fixture_dir("tiny-b"), ctx, 0, DType::Q8_0),
                       doctest::Contains("n_inner is 200"), Error);
  CHECK_THROWS_WITH_AS(model_dtypes(Device::CUDA, DType::Q8_0),
                       doctest::Contains("q8_0 runs on the cpu only"), Error);
}

TEST_CASE("decoding token by token gives the logits of one prefill; batch rows are independent") {
  Context ctx(2);
  const gpt2::Model model = gpt2::Model::open("synthetic:tiny", ctx, 3);
  const std::int64_t vocab = model.config().vocab_size;
  const std::vector<std::int32_t> a = {464, 2068, 7586, 21831, 18045, 625};
  const std::vector<std::int32_t> b = {50256, 1, 50000, 42, 42, 7};
  KVCache full_cache = model.new_cache(ctx, 1, 6);
  const Tensor full = model.forward(ctx, a, 1, full_cache, true);

  KVCache step_cache = model.new_cache(ctx, 1, 6);
  model.forward(ctx, std::span(a).first(2), 1, step_cache);  // prefill 2, then 1 at a time
  for (std::size_t t = 2; t < a.size(); ++t) {
    const Tensor step = model.forward(ctx, std::span(a).subspan(t, 1), 1, step_cache);
    for (std::int64_t v = 0; v < vocab; v += 97) {
      REQUIRE(step.data<float>()[v] ==
              doctest::Approx(full.data<float>()[static_cast<std::int64_t>(t) * vocab + v])
                  .epsilon(1e-5));
    }
  }

  std::vector<std::int32_t> both = a;
  both.insert(both.end(), b.begin(), b.end());
  KVCache batch_cache = model.new_cache(ctx, 2, 6);
  const Tensor batched = model.forward(ctx, both, 2, batch_cache);
  KVCache single_cache = model.new_cache(ctx, 1, 6);
  const Tensor second = model.forward(ctx, b, 1, single_cache);
  for (std::int64_t v = 0; v < vocab; v += 31) {
    REQUIRE(batched.data<float>()[v] ==
            doctest::Approx(full.data<float>()[5 * vocab + v]).epsilon(1e-5));
    REQUIRE(batched.data<float>()[vocab + v] ==
            doctest::Approx(second.data<float>()[v]).epsilon(1e-5));
  }
}

TEST_CASE("the context length and the cache capacity are enforced") {
  Context ctx(1);
  const gpt2::Model model = gpt2::Model::open(hf_fixture_dir("tiny-a"), ctx);  // context 64
  std::vector<std::int32_t> ids(65, 1);
  CHECK_THROWS_AS(model.new_cache(ctx, 1, 65), Error);
  KVCache cache = model.new_cache(ctx, 1, 64);
  CHECK_THROWS_WITH_AS(model.forward(ctx, ids, 1, cache), doctest::Contains("context length"),
                       Error);
  KVCache small = model.new_cache(ctx, 1, 4);
  CHECK_THROWS_WITH_AS(model.forward(ctx, std::span(ids).first(5), 1, small),
                       doctest::Contains("capacity"), Error);
  const std::vector<std::int32_t> bad = {1, 512};
  CHECK_THROWS_WITH_AS(model.forward(ctx, bad, 1, cache), doctest::Contains("vocabulary"), Error);
}

TEST_CASE("synthetic models have GPT-2's real shapes and seeded weights") {
  CHECK(gpt2::count_parameters(gpt2::synthetic_config("gpt2")) == 124439808);
  CHECK(gpt2::count_parameters(gpt2::synthetic_config("gpt2-medium")) == 354823168);
  CHECK(gpt2::count_parameters(gpt2::synthetic_config("gpt2-large")) == 774030080);
  CHECK(gpt2::count_parameters(gpt2::synthetic_config("gpt2-xl")) == 1557611200);
  CHECK_THROWS_WITH_AS(gpt2::synthetic_config("gpt3"), doctest::Contains("valid: gpt2"), Error);

  Context ctx(2);
  const gpt2::Model one = gpt2::Model::open("synthetic:tiny", ctx, 1);
  const gpt2::Model same = gpt2::Model::open("synthetic:tiny", ctx, 1);
  const gpt2::Model other = gpt2::Model::open("synthetic:tiny", ctx, 2);
  const Tensor& w1 = one.weights().layers[0].attn_qkv_weight;
  const Tensor& w2 = same.weights().layers[0].attn_qkv_weight;
  const Tensor& w3 = other.weights().layers[0].attn_qkv_weight;
  CHECK(std::equal(w1.data<float>(), w1.data<float>() + w1.numel(), w2.data<float>()));
  CHECK_FALSE(std::equal(w1.data<float>(), w1.data<float>() + w1.numel(), w3.data<float>()));
  double sum_squares = 0.0;
  for (std::int64_t i = 0; i < w1.numel(); ++i)
    sum_squares += double(w1.data<float>()[i]) * w1.data<float>()[i];
  CHECK(std::sqrt(sum_squares / static_cast<double>(w1.numel())) ==
        doctest::Approx(0.02).epsilon(0.02));
  CHECK(one.weights().layers[1].ln_2_weight.data<float>()[5] == 1.0f);
}

TEST_CASE("the loader refuses pickles, missing files, and checkpoints that do not fit") {
  Context ctx(1);
  const std::string source = hf_fixture_dir("tiny-a");
  CHECK_THROWS_WITH_AS(gpt2::Model::open("/no/such/model", ctx), doctest::Contains("no such file"),
                       Error);

  testing::TempDir pickle;
  std::ofstream(pickle.path() / "pytorch_model.bin") << "not really a pickle";
  CHECK_THROWS_WITH_AS(gpt2::Model::open(pickle.path().string(), ctx),
                       doctest::Contains("safe_serialization=True"), Error);

  testing::TempDir no_config;
  fs::copy_file(source + "/model.safetensors", no_config.path() / "model.safetensors");
  CHECK_THROWS_WITH_AS(gpt2::Model::open(no_config.path().string(), ctx),
                       doctest::Contains("config.json"), Error);

  testing::TempDir truncated;
  fs::copy_file(source + "/config.json", truncated.path() / "config.json");
  fs::copy_file(source + "/model.safetensors", truncated.path() / "model.safetensors");
  fs::resize_file(truncated.path() / "model.safetensors",
                  fs::file_size(truncated.path() / "model.safetensors") / 2);
  CHECK_THROWS_AS(gpt2::Model::open(truncated.path().string(), ctx), Error);

  // Rewrite the checkpoint with one change each: a tensor missing, reshaped, or one too many.
  const SafetensorsFile original = SafetensorsFile::open(source + "/model.safetensors");
  auto rewrite = [&](const std::string& skip, const std::string& reshape,
                     const std::string& extra) {
    testing::TempDir dir;
    testing::SafetensorsWriter writer;
    for (const SafetensorsEntry& e : original.entries()) {
      if (e.name == skip) continue;
      const Tensor t = original.tensor(e.name);
      Shape shape = e.shape;
      if (e.name == reshape) shape = {shape[1], shape[0]};
      writer.add(e.name, e.dtype, shape,
                 std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
    }
    if (!extra.empty()) writer.add_f32(extra, {2}, {1.0f, 2.0f});
    fs::copy_file(source + "/config.json", dir.path() / "config.json");
    testing::write_file((dir.path() / "model.safetensors").string(), writer.serialize());
    try {
      gpt2::Model::open(dir.path().string(), ctx);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  CHECK(rewrite("transformer.h.1.mlp.c_fc.bias", "", "").find("missing tensor") !=
        std::string::npos);
  CHECK(rewrite("", "transformer.h.0.attn.c_attn.weight", "").find("expected shape") !=
        std::string::npos);
  CHECK(rewrite("", "", "transformer.h.0.attn.rotary").find("unexpected tensor") !=
        std::string::npos);
  CHECK(rewrite("", "", "") == "loaded");

  testing::TempDir empty;
  CHECK_THROWS_WITH_AS(gpt2::Model::open(empty.path().string(), ctx),
                       doctest::Contains("no model.safetensors (or model.safetensors.index.json)"),
                       Error);
}

TEST_CASE("a checkpoint split into shards loads as the single file does") {
  Context ctx(1);
  const std::string source = hf_fixture_dir("tiny-a");
  const SafetensorsFile original = SafetensorsFile::open(source + "/model.safetensors");
  // Each tensor goes to the shard of its position modulo 3; the index lists them.
  testing::TempDir dir;
  testing::SafetensorsWriter shards[3];
  nlohmann::json weight_map = nlohmann::json::object();
  for (std::size_t i = 0; i < original.entries().size(); ++i) {
    const SafetensorsEntry& e = original.entries()[i];
    const Tensor t = original.tensor(e.name);
    shards[i % 3].add(e.name, e.dtype, e.shape,
                      std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
    weight_map[e.name] = "part-" + std::to_string(i % 3) + ".safetensors";
  }
  for (int s = 0; s < 3; ++s) {
    testing::write_file((dir.path() / ("part-" + std::to_string(s) + ".safetensors")).string(),
                        shards[s].serialize());
  }
  testing::write_file(
      (dir.path() / "model.safetensors.index.json").string(),
      nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", weight_map}}.dump());
  fs::copy_file(source + "/config.json", dir.path() / "config.json");

  const gpt2::Model single = gpt2::Model::open(source, ctx);
  const gpt2::Model sharded = gpt2::Model::open(dir.path().string(), ctx);
  CHECK(sharded.stored_tensors().size() == single.stored_tensors().size());
  const std::vector<std::int32_t> ids = {3, 1, 4, 1, 5, 9};
  KVCache a = single.new_cache(ctx, 1, 6);
  KVCache b = sharded.new_cache(ctx, 1, 6);
  const Tensor expected = single.forward(ctx, ids, 1, a);
  const Tensor actual = sharded.forward(ctx, ids, 1, b);
  CHECK(std::equal(expected.data<float>(), expected.data<float>() + expected.numel(),
                   actual.data<float>()));

  // A tensor of a shape the config does not expect is refused, naming the index.
  nlohmann::json config = nlohmann::json::parse(std::ifstream(source + "/config.json"));
  config["n_inner"] = 128;
  testing::write_file((dir.path() / "config.json").string(), config.dump());
  CHECK_THROWS_WITH_AS(gpt2::Model::open(dir.path().string(), ctx),
                       doctest::Contains("model.safetensors.index.json: tensor "
                                         "'transformer.h.0.mlp.c_fc."),
                       Error);
}
