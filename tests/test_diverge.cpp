// The attention tap (runtime/attention_tap.h) and the two tools built on it: the attention map of
// --attention-out (tools/attnscope/measure/attention_map.h) and `diverge`'s comparison of two runs
// (tools/attnscope/measure/divergence.h), on the tiny synthetic models of both families.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "reference_ops.h"
#include "runtime/attention_tap.h"
#include "runtime/error.h"
#include "runtime/npy.h"
#include "runtime/transfer.h"
#include "safetensors_writer.h"
#include "tools/attnscope/measure/attention_map.h"
#include "tools/attnscope/measure/divergence.h"

using namespace attnscope;

namespace {

const char* const kModels[] = {"synthetic:tiny", "synthetic:llama-tiny"};
const std::vector<std::int32_t> kPrompt = {5, 17, 3, 99, 42, 7, 11};
const char* const kEagerBackends[] = {"naive", "inplace", "math", "fused"};

// Keeps host copies of what the tap saw (q, the valid rows of k, the backend's probabilities),
// and passes every call on to `inner` when given.
struct CapturingTap final : AttentionTap {
  struct Seen {
    std::int64_t layer = 0, kv_len = 0;
    float scale = 1;
    Tensor q, k, probs;  // probs undefined for flash
  };
  AttentionTap* inner = nullptr;
  Tensor pending;
  std::vector<Seen> calls;

  void probabilities(Context& ctx, const Tensor& probs) override {
    pending = probs;
    if (inner) inner->probabilities(ctx, probs);
  }
  void attention(Context& ctx, const Call& call) override {
    Allocator& host = ctx.host_allocator();
    calls.push_back(
        {call.layer, call.kv_len, call.scale, to_host(ctx, call.q).to_dtype(DType::F32, host),
         to_host(ctx, call.k).to_dtype(DType::F32, host),
         pending.defined() ? to_host(ctx, pending).to_dtype(DType::F32, host) : Tensor()});
    pending = Tensor();
    if (inner) inner->attention(ctx, call);
  }
};

// Runs the prompt's prefill and then `decode_steps` decode steps (token 1 each) with `tap`.
void run_steps(Context& ctx, const LanguageModel& model, AttentionTap& tap, int decode_steps) {
  KVCache cache = model.new_cache(ctx, 1, static_cast<std::int64_t>(kPrompt.size()) + decode_steps);
  ctx.set_attention_tap(&tap);
  model.forward(ctx, kPrompt, 1, cache);
  const std::int32_t next = 1;
  for (int i = 0; i < decode_steps; ++i) model.forward(ctx, std::span(&next, 1), 1, cache);
  ctx.set_attention_tap(nullptr);
}

}  // namespace

TEST_CASE("the eager backends' probabilities reach the tap and equal softmax(q k^T) in float64") {
  Context ctx(2);
  for (const char* spec : kModels) {
    std::unique_ptr<LanguageModel> model = open_model(spec, ctx);
    for (const char* backend : kEagerBackends) {
      CAPTURE(spec);
      CAPTURE(backend);
      model->set_attention(backend);
      CapturingTap tap;
      run_steps(ctx, *model, tap, 2);
      REQUIRE(tap.calls.size() == 3 * static_cast<std::size_t>(model->config().n_layers));
      for (const CapturingTap::Seen& seen : tap.calls) {
        REQUIRE(seen.probs.defined());
        const std::vector<double> expected =
            testing::reference_probabilities(seen.q, seen.k, seen.kv_len, seen.scale);
        REQUIRE(seen.probs.numel() == static_cast<std::int64_t>(expected.size()));
        double worst = 0;
        for (std::size_t i = 0; i < expected.size(); ++i) {
          worst = std::max(worst, std::fabs(seen.probs.data<float>()[i] - expected[i]));
        }
        CHECK(worst < 1e-5);
      }
    }
  }
}

TEST_CASE("flash shows the tap no probabilities; the map recomputes them as every backend's") {
  Context ctx(2);
  for (const char* spec : kModels) {
    std::unique_ptr<LanguageModel> model = open_model(spec, ctx);
    for (const char* backend : {"flash", "naive", "fused"}) {
      CAPTURE(spec);
      CAPTURE(backend);
      model->set_attention(backend);
      cli::AttentionMapRecorder recorder(model->config(), {}, cli::AttentionMapSteps::All);
      CapturingTap tap;
      tap.inner = &recorder;
      run_steps(ctx, *model, tap, 2);
      CHECK(recorder.recomputed() == (std::string(backend) == "flash"));
      const std::vector<std::int64_t> shape = recorder.shape();
      const std::int64_t positions = static_cast<std::int64_t>(kPrompt.size()) + 2;
      REQUIRE(shape == std::vector<std::int64_t>{model->config().n_layers, model->config().n_heads,
                                                 positions, positions});
      const std::vector<float> map = recorder.values();
      // Every call's rows, placed at their positions, against the float64 reference from the q
      // and k that call saw.
      double worst = 0;
      for (const CapturingTap::Seen& seen : tap.calls) {
        CHECK(seen.probs.defined() == (std::string(backend) != "flash"));
        const std::int64_t q_len = seen.q.dim(2), heads = seen.q.dim(1);
        const std::vector<double> expected =
            testing::reference_probabilities(seen.q, seen.k, seen.kv_len, seen.scale);
        for (std::int64_t h = 0; h < heads; ++h) {
          for (std::int64_t i = 0; i < q_len; ++i) {
            const std::int64_t position = seen.kv_len - q_len + i;
            const float* row =
                map.data() + ((seen.layer * heads + h) * positions + position) * positions;
            for (std::int64_t j = 0; j < positions; ++j) {
              const double want =
                  j < seen.kv_len ? expected[(h * q_len + i) * seen.kv_len + j] : 0.0;
              worst = std::max(worst, std::fabs(row[j] - want));
            }
          }
        }
      }
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE(
    "--attention-out's file: [layer, head, query, key], rows summing to 1, 0 past the diagonal") {
  Context ctx(2);
  std::unique_ptr<LanguageModel> model = open_model("synthetic:llama-tiny", ctx);
  model->set_attention("flash");
  testing::TempDir dir;
  cli::AttentionMapOptions options;
  options.path = dir.file("map.npy");
  options.layers = {1};
  options.heads = {3, 0};
  // The prefill only (as profile --model saves it): the decode steps after it leave no rows.
  cli::with_attention_map(ctx, *model, options, cli::AttentionMapSteps::Prefill, [&] {
    KVCache cache = model->new_cache(ctx, 1, 9);
    model->forward(ctx, kPrompt, 1, cache);
    const std::int32_t next = 1;
    model->forward(ctx, std::span(&next, 1), 1, cache);
  });
  CHECK(ctx.attention_tap() == nullptr);
  std::ifstream in(options.path, std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  const std::int64_t t = static_cast<std::int64_t>(kPrompt.size());
  const std::int64_t shape[] = {1, 2, t, t};
  const std::size_t header_len =
      static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  CHECK(bytes.substr(10, header_len).starts_with(npy_header_dict(shape)));
  REQUIRE(bytes.size() == 10 + header_len + 2 * t * t * sizeof(float));
  std::vector<float> map(static_cast<std::size_t>(2 * t * t));
  std::memcpy(map.data(), bytes.data() + 10 + header_len, map.size() * sizeof(float));
  for (std::int64_t row = 0; row < 2 * t; ++row) {
    const std::int64_t position = row % t;
    double visible = 0, beyond = 0;
    for (std::int64_t j = 0; j < t; ++j) {
      (j <= position ? visible : beyond) += map[static_cast<std::size_t>(row * t + j)];
    }
    CHECK(visible == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(beyond == 0.0);
  }

  options.layers = {2};
  CHECK_THROWS_WITH_AS(
      cli::AttentionMapRecorder(model->config(), options, cli::AttentionMapSteps::All),
      doctest::Contains("outside the model's 2"), Error);
  options.layers = {0, 0};
  CHECK_THROWS_AS(cli::AttentionMapRecorder(model->config(), options, cli::AttentionMapSteps::All),
                  Error);
}

TEST_CASE("diverge of a backend against itself is exactly zero everywhere") {
  Context ctx(2);
  for (const char* spec : kModels) {
    std::unique_ptr<LanguageModel> model = open_model(spec, ctx);
    for (const char* backend : {"naive", "flash"}) {
      CAPTURE(spec);
      CAPTURE(backend);
      model->set_attention(backend);
      const cli::RunRecord a = cli::record_run(ctx, *model, kPrompt);
      const cli::RunRecord b = cli::record_run(ctx, *model, kPrompt);
      const cli::Divergence d = cli::compare_runs(a, b);
      REQUIRE(d.layers.size() == static_cast<std::size_t>(model->config().n_layers));
      for (const cli::LayerDivergence& layer : d.layers) {
        CHECK(layer.all.out_max == 0.0);
        CHECK(layer.all.lse_max == 0.0);
        CHECK(layer.all.row_max_max == 0.0);
        CHECK(layer.top1_flips == 0);
        CHECK(layer.all.error_run == layer.all.error_against);
        CHECK(layer.all.error_run < 1e-5);  // the backend's own error against float64
      }
      CHECK(d.first_output_difference == -1);
      CHECK(d.first_flip == -1);
      CHECK(d.kl_mean == 0.0);
      CHECK(d.kl_max == 0.0);
    }
  }
}

TEST_CASE("a perturbed layer is where diverge finds the first difference") {
  Context ctx(2);
  for (const char* spec : kModels) {
    CAPTURE(spec);
    std::unique_ptr<LanguageModel> model = open_model(spec, ctx);
    model->set_attention("naive");
    const std::int64_t perturbed = 1;
    const cli::RunRecord a = cli::record_run(ctx, *model, kPrompt);
    const cli::RunRecord b = cli::record_run(ctx, *model, kPrompt, perturbed);
    const cli::Divergence d = cli::compare_runs(a, b);
    CHECK(d.layers[0].all.out_max == 0.0);
    CHECK(d.layers[1].all.out_max > 0.0);
    CHECK(d.layers[1].all.lse_max == 0.0);  // the same inputs: only the output was touched
    CHECK(d.first_output_difference == perturbed);
    CHECK(d.first_input_difference == -1);  // no layer after the last one sees its inputs change
    CHECK(d.kl_max > 0.0);
    // Rounded to bf16: at most half a bf16 step (2^-8 relative) per element.
    double largest = 0;
    for (float x : a.layers[1].attention.out) largest = std::max(largest, double(std::fabs(x)));
    CHECK(d.layers[1].all.out_max <= largest * 0x1p-8);
    CHECK_THROWS_AS(cli::record_run(ctx, *model, kPrompt, 2), Error);
  }
}

TEST_CASE("a flash run against naive differs by f32 rounding, from the first layer on") {
  Context ctx(2);
  std::unique_ptr<LanguageModel> model = open_model("synthetic:tiny", ctx);
  model->set_attention("flash");
  const cli::RunRecord flash = cli::record_run(ctx, *model, kPrompt);
  model->set_attention("naive");
  const cli::RunRecord naive = cli::record_run(ctx, *model, kPrompt);
  const cli::Divergence d = cli::compare_runs(flash, naive);
  CHECK(d.layers[0].all.lse_max == 0.0);  // layer 0 sees the same q and k
  CHECK(d.layers[0].all.out_max < 1e-5);
  for (const cli::LayerDivergence& layer : d.layers) CHECK(layer.all.out_max < 1e-4);
  CHECK(d.kl_max < 1e-6);

  std::unique_ptr<LanguageModel> other = open_model("synthetic:llama-tiny", ctx);
  CHECK_THROWS_WITH_AS(cli::compare_runs(flash, cli::record_run(ctx, *other, kPrompt)),
                       doctest::Contains("not of one model"), Error);
}
