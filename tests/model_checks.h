// What the model suites of both families (tests/test_gpt2.cpp, tests/test_llama.cpp, and on a GPU
// tests/test_cuda_model.cpp, tests/test_cuda_llama.cpp) check a LanguageModel with: a fixture's
// input as one prefill, greedy generation as `attnscope generate` runs it and its tokens against
// the fixture's, every logit of a fixture's prefill or of its token-by-token decode, the
// fixture's reference logits, their largest difference, a logit change held to its bound, every
// fixture run with every attention backend, the 16-bit fixtures (stored rounded, or an f32
// checkpoint narrowed at load), q8_0 decode against its prefill, and a checkpoint rewritten with
// its matrices replaced by what q8_0 stores for them. A reference.json holds input_ids [B][T],
// logits [B][T][V], greedy {prompt_ids, generated_ids} and greedy_min_margin (both fixture sets).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cpu_levels.h"
#include "models/language_model.h"
#include "ops/attention/registry.h"
#include "ops/cpu/linear_q8_0.h"
#include "ops/cpu/output_blocks.h"
#include "runtime/cpu_features.h"
#include "runtime/q8_0.h"
#include "runtime/safetensors.h"
#include "runtime/sampler.h"
#include "runtime/transfer.h"
#include "safetensors_writer.h"

namespace attnscope::testing {

// A fixture's input ids [B][T] as one prefill: the B rows back to back.
struct Prefill {
  std::vector<std::int32_t> ids;
  std::int64_t batch = 0;
  std::int64_t length = 0;
};
inline Prefill reference_prefill(const nlohmann::json& reference) {
  const auto rows = reference["input_ids"].get<std::vector<std::vector<std::int32_t>>>();
  Prefill prefill{
      {}, static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows[0].size())};
  for (const auto& row : rows) prefill.ids.insert(prefill.ids.end(), row.begin(), row.end());
  return prefill;
}

// Logits on any device, copied to the host.
inline std::vector<float> host_logits(Context& ctx, const Tensor& logits) {
  const Tensor host = to_host(ctx, logits);
  return {host.data<float>(), host.data<float>() + host.numel()};
}

// Greedy generation through prefill + one-token decode steps, as `attnscope generate` does it,
// launched by `runner`; the arg max is taken on the host, so a GPU test does not depend on the
// device sampler.
inline std::vector<std::int32_t> greedy(Context& ctx, const LanguageModel& model,
                                        StepRunner& runner, const std::vector<std::int32_t>& prompt,
                                        int new_tokens) {
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
// The same with every kernel launched eagerly.
inline std::vector<std::int32_t> greedy(Context& ctx, const LanguageModel& model,
                                        const std::vector<std::int32_t>& prompt, int new_tokens) {
  StepRunner eager(false);
  return greedy(ctx, model, eager, prompt, new_tokens);
}

// Checks that greedy generation launched by `runner` gives the fixture's greedy tokens exactly
// (no margin condition, unlike check_greedy_tokens).
inline void check_greedy_equals_reference(Context& ctx, const LanguageModel& model,
                                          StepRunner& runner, const nlohmann::json& reference) {
  const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<std::int32_t>>();
  const auto expected = reference["greedy"]["generated_ids"].get<std::vector<std::int32_t>>();
  CHECK(greedy(ctx, model, runner, prompt, static_cast<int>(expected.size())) == expected);
}
// The same with every kernel launched eagerly.
inline void check_greedy_equals_reference(Context& ctx, const LanguageModel& model,
                                          const nlohmann::json& reference) {
  StepRunner eager(false);
  check_greedy_equals_reference(ctx, model, eager, reference);
}

// A prefill of `batch` sequences of `length` ids, id i of them (7 i + 3) mod `vocab`: as many rows
// as a test needs, where a fixture's own input has too few.
inline Prefill patterned_prefill(std::int64_t batch, std::int64_t length, std::int64_t vocab) {
  Prefill prefill{{}, batch, length};
  for (std::int64_t i = 0; i < batch * length; ++i) {
    prefill.ids.push_back(static_cast<std::int32_t>((7 * i + 3) % vocab));
  }
  return prefill;
}

// Every logit of a prefill, as float64 [B * T * V].
inline std::vector<double> all_logits(Context& ctx, const LanguageModel& model,
                                      const Prefill& prefill) {
  KVCache cache = model.new_cache(ctx, prefill.batch, prefill.length);
  const Tensor logits = model.forward(ctx, prefill.ids, prefill.batch, cache, true);
  return {logits.data<float>(), logits.data<float>() + logits.numel()};
}
// The same over the fixture's input ids.
inline std::vector<double> all_logits(Context& ctx, const LanguageModel& model,
                                      const nlohmann::json& reference) {
  return all_logits(ctx, model, reference_prefill(reference));
}

// The largest |logit - expected| over decoding row 0 of the fixture's input one token per step;
// `expected` is flattened as all_logits flattens it (row 0 first).
inline double decode_logit_change(Context& ctx, const LanguageModel& model,
                                  const nlohmann::json& reference,
                                  const std::vector<double>& expected) {
  const auto ids = reference["input_ids"][0].get<std::vector<std::int32_t>>();
  const auto length = static_cast<std::int64_t>(ids.size());
  const std::int64_t vocab = model.config().vocab_size;
  KVCache cache = model.new_cache(ctx, 1, length);
  double change = 0.0;
  for (std::int64_t t = 0; t < length; ++t) {
    const Tensor logits = model.forward(ctx, {&ids[static_cast<std::size_t>(t)], 1}, 1, cache);
    for (std::int64_t v = 0; v < vocab; ++v) {
      change = std::max(change, std::fabs(logits.data<float>()[v] -
                                          expected[static_cast<std::size_t>(t * vocab + v)]));
    }
  }
  return change;
}

// Checks that greedy generation reproduces the fixture's tokens when every greedy step's top-1
// lead (greedy_min_margin) exceeds 2 x `bound`, so that no logit within the bound can overtake
// the top one; says so when it does not, and compares nothing then.
inline void check_greedy_tokens(Context& ctx, const LanguageModel& model,
                                const nlohmann::json& reference, double bound) {
  const double margin = reference["greedy_min_margin"].get<double>();
  if (margin <= 2.0 * bound) {
    MESSAGE("greedy margin " << margin << " <= 2 x bound " << bound << ": tokens not compared");
    return;
  }
  const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<std::int32_t>>();
  const auto tokens = reference["greedy"]["generated_ids"].get<std::vector<std::int32_t>>();
  CHECK(greedy(ctx, model, prompt, static_cast<int>(tokens.size())) == tokens);
}

// The fixture's logits, flattened as all_logits flattens them.
inline std::vector<double> reference_logits(const nlohmann::json& reference) {
  std::vector<double> out;
  for (const auto& sequence : reference["logits"]) {
    for (const auto& position : sequence) {
      for (const auto& value : position) out.push_back(value.get<double>());
    }
  }
  return out;
}

inline double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// max |actual - expected| / max(|expected|, 1): the measure of the f32 parity bounds.
inline double max_relative_difference(const std::vector<double>& actual,
                                      const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    worst =
        std::max(worst, std::fabs(actual[i] - expected[i]) / std::max(std::fabs(expected[i]), 1.0));
  }
  return worst;
}

// The f32 parity measure (max_relative_difference) of one prefill over the fixture's input ids,
// every position kept, against the fixture's logits; requires the logits [B, T, V].
inline double prefill_relative_error(Context& ctx, const LanguageModel& model,
                                     const nlohmann::json& reference) {
  const Prefill prefill = reference_prefill(reference);
  KVCache cache = model.new_cache(ctx, prefill.batch, prefill.length);
  const Tensor logits = model.forward(ctx, prefill.ids, prefill.batch, cache, true);
  REQUIRE(logits.shape() == Shape{prefill.batch, prefill.length, model.config().vocab_size});
  const std::vector<double> actual(logits.data<float>(), logits.data<float>() + logits.numel());
  return max_relative_difference(actual, reference_logits(reference));
}

// Checks a logit change of narrowed or quantized weights against its bound: the weights really
// changed (change > 0), the change is within `bound`, and greedy tokens follow
// (check_greedy_tokens).
inline void check_change_within_bound(Context& ctx, const LanguageModel& model,
                                      const nlohmann::json& reference, double change,
                                      double bound) {
  CHECK(change > 0.0);
  CHECK(change <= bound);
  check_greedy_tokens(ctx, model, reference, bound);
}

// Checks the prefill logits `actual` (of at least gemm_min_rows rows) of a model with q8_0 or bf16
// weights against the f32 models of the same weight values (`widened`: dequantized or widened)
// and of the original weights (`original`), all over the same ids. Where prefill keeps x in f32,
// widening is exact: the logits must be the widened model's within `parity` (relative). Where it
// narrows x too (`x_narrowed`: q8_0 at avx512vnni and avx512bf16 quantizes x in blocks of 32 as
// decode does, ops/cpu/gemm_q8_0_vnni.cpp; bf16 at avx512bf16 and amx rounds it to bf16,
// ops/cpu/output_blocks.h's bf16_linear_rounds_x), that is a second perturbation of the same
// relative size per value as the weights' (D, the change the weights alone make): as the decode
// tests bound it, the change from the original logits stays within 2 (D + D) + 2 parity, and it
// differs from the widened model's by more than parity (x really is narrowed). Either way the
// original weights give other logits.
inline void check_narrow_weights_prefill(const std::vector<double>& actual,
                                         const std::vector<double>& widened,
                                         const std::vector<double>& original, double parity,
                                         bool x_narrowed) {
  const double from_widened = max_relative_difference(actual, widened);
  if (x_narrowed) {
    const double weights_change = max_relative_difference(widened, original);
    const double change = max_relative_difference(actual, original);
    MESSAGE("prefill with x narrowed: relative logit change "
            << change << " (weights alone: " << weights_change << ")");
    CHECK(change <= 4.0 * weights_change + 2.0 * parity);
    CHECK(from_widened > parity);
  } else {
    CHECK(from_widened < parity);
  }
  CHECK(max_abs_difference(actual, original) > 0.0);
}

// The bf16 prefill check of both families: `base`-bf16 (`base`'s weights rounded to bf16) at
// --dtype bf16 against the same checkpoint at f32 and `base` at f32 (`dir` finds each fixture),
// over 2 x context ids (at least gemm_min_rows: at most 128), with `parity` for the model
// (check_narrow_weights_prefill).
template <typename Model>
void check_bf16_prefill(const std::string& base, std::string (*dir)(const std::string&),
                        double (*parity)(const Model&, const Prefill&)) {
  Context ctx(2);
  const Model bf16 = Model::open(dir(base + "-bf16"), ctx, 0, DType::BF16);
  const Model widened = Model::open(dir(base + "-bf16"), ctx, 0, DType::F32);
  const Model original = Model::open(dir(base), ctx, 0, DType::F32);
  const Prefill prefill =
      patterned_prefill(2, bf16.config().context_length, bf16.config().vocab_size);
  REQUIRE(prefill.batch * prefill.length >= ops::cpu::gemm_min_rows(cpu_level(), DType::BF16));
  check_narrow_weights_prefill(
      all_logits(ctx, bf16, prefill), all_logits(ctx, widened, prefill),
      all_logits(ctx, original, prefill), parity(bf16, prefill),
      ops::cpu::bf16_linear_rounds_x(cpu_level(), prefill.batch * prefill.length));
}

// Runs `check(ctx, model, reference)` for each fixture of `names` with every attention backend:
// the fixture's f32 model (Model::open of `dir(name)` on a CPU context of 2 threads) and its
// reference.json (`read(name)`), with the fixture's name and the backend CAPTUREd.
template <typename Model, typename Check>
void for_each_fixture_and_backend(std::span<const char* const> names,
                                  std::string (*dir)(const std::string&),
                                  nlohmann::json (*read)(const std::string&), const Check& check) {
  for (const char* name : names) {
    CAPTURE(name);
    const nlohmann::json reference = read(name);
    Context ctx(2);
    Model model = Model::open(dir(name), ctx);
    for (const std::string& backend : ops::attention::backend_names()) {
      model.set_attention(backend);
      CAPTURE(backend);
      check(ctx, model, reference);
    }
  }
}

// Runs `check(ctx, model, reference, dtype)` for the fixtures `base`-bf16 and `base`-f16, whose
// weights are `base`'s rounded to that dtype and stored in it: each loaded at its dtype (on a CPU
// context of 2 threads) with its reference.json (`read`), the fixture's name CAPTUREd.
template <typename Model, typename Check>
void for_each_stored_16bit_fixture(const std::string& base, std::string (*dir)(const std::string&),
                                   nlohmann::json (*read)(const std::string&), const Check& check) {
  for (const DType dtype : {DType::BF16, DType::F16}) {
    const std::string fixture = base + "-" + std::string(dtype_name(dtype));
    CAPTURE(fixture);
    const nlohmann::json reference = read(fixture);
    Context ctx(2);
    const Model model = Model::open(dir(fixture), ctx, 0, dtype);
    // Where bf16 products round x to bf16 (avx512bf16 from 5 rows, amx's prefill: checked by the
    // tests "bf16 weights on the cpu: prefill computes the f32 model of the same weights"), these
    // checks of the f32 math run at avx512vnni.
    const auto rows =
        static_cast<std::int64_t>(reference["input_ids"].size() * reference["input_ids"][0].size());
    std::optional<CpuLevelCap> f32_math;
    if (dtype == DType::BF16 && ops::cpu::bf16_linear_rounds_x(cpu_level(), rows)) {
      f32_math.emplace(CpuLevel::Avx512Vnni);
    }
    check(ctx, model, reference, dtype);
  }
}

// Checks the f32 fixture `base` narrowed at load to bf16 and to f16 against the logit change
// transformers itself measures for rounding every weight (the fixtures `base`-bf16, `base`-f16):
// the change stays within `bound(transformers_change, model, f32_reference)` and greedy tokens
// follow (check_change_within_bound). Both changes are reported; the dtype is CAPTUREd.
template <typename Model, typename Bound>
void check_narrowed_at_load(const std::string& base, std::string (*dir)(const std::string&),
                            nlohmann::json (*read)(const std::string&), const Bound& bound) {
  const nlohmann::json f32_reference = read(base);
  const std::vector<double> f32_logits = reference_logits(f32_reference);
  for (const DType dtype : {DType::BF16, DType::F16}) {
    const std::string_view weight_dtype = dtype_name(dtype);
    CAPTURE(weight_dtype);
    const double transformers_change = max_abs_difference(
        reference_logits(read(base + "-" + std::string(weight_dtype))), f32_logits);
    Context ctx(2);
    const Model model = Model::open(dir(base), ctx, 0, dtype);
    const double change = max_abs_difference(all_logits(ctx, model, f32_reference), f32_logits);
    MESSAGE(weight_dtype << " weights: max |logit change| " << change << " (transformers, "
                         << "every weight rounded: " << transformers_change << ")");
    check_change_within_bound(ctx, model, f32_reference, change,
                              bound(transformers_change, model, f32_reference));
  }
}

// Checks the f32 fixture `base` loaded with q8_0 weights: its decode's logit change (over row 0,
// decode_logit_change) stays within `bound(weights_change, model, reference)`, where
// weights_change is the change of the f32 model whose matrices hold the dequantized weights
// (`dequantized`, a checkpoint from write_q8_0_dequantized): the weights' quantization alone, as
// prefill computes it from gemm_min_rows rows on. Greedy tokens must follow
// (check_change_within_bound). Both changes are reported.
template <typename Model, typename Bound>
void check_q8_0_decode(const std::string& base, std::string (*dir)(const std::string&),
                       nlohmann::json (*read)(const std::string&), const std::string& dequantized,
                       const Bound& bound) {
  const nlohmann::json reference = read(base);
  const std::vector<double> f32_logits = reference_logits(reference);
  Context ctx(2);
  const Model model = Model::open(dir(base), ctx, 0, DType::Q8_0);
  const double weights_change = max_abs_difference(
      all_logits(ctx, Model::open(dequantized, ctx, 0, DType::F32), reference), f32_logits);
  const double change = decode_logit_change(ctx, model, reference, f32_logits);
  MESSAGE("q8_0 decode: max |logit change| " << change << " (weights alone: " << weights_change
                                             << ")");
  check_change_within_bound(ctx, model, reference, change, bound(weights_change, model, reference));
}

// How a checkpoint stores one tensor, for write_q8_0_dequantized: not a matrix q8_0 would store,
// a matrix stored as attnscope computes with it ([out, in], torch.nn.Linear), or one stored
// transposed ([in, out], GPT-2's Conv1D).
enum class StoredMatrix { No, OutIn, InOut };

// The checkpoint `source` (a directory with config.json and one model.safetensors, all f32)
// written into `dir` with every matrix `layout` names replaced by the f32 values q8_0 stores for
// it (runtime/q8_0.h): quantized in blocks along each row of attnscope's [out, in] layout, then
// dequantized, which is exact. Everything else is copied. Returns the new checkpoint's directory.
inline std::string write_q8_0_dequantized(
    const TempDir& dir, const std::string& source,
    const std::function<StoredMatrix(const SafetensorsEntry&)>& layout) {
  const SafetensorsFile original = SafetensorsFile::open(source + "/model.safetensors");
  SafetensorsWriter writer;
  for (const SafetensorsEntry& e : original.entries()) {
    const Tensor t = original.tensor(e.name);
    const StoredMatrix stored_as = layout(e);
    if (stored_as == StoredMatrix::No) {
      writer.add(e.name, e.dtype, e.shape,
                 std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
      continue;
    }
    REQUIRE(e.dtype == "F32");
    const bool transposed = stored_as == StoredMatrix::InOut;
    const std::int64_t rows = transposed ? e.shape[1] : e.shape[0];
    const std::int64_t in = transposed ? e.shape[0] : e.shape[1];
    std::vector<float> values(static_cast<std::size_t>(rows * in));  // [rows, in]
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < in; ++k) {
        values[r * in + k] =
            transposed ? t.data<float>()[k * rows + r] : t.data<float>()[r * in + k];
      }
    }
    std::vector<BlockQ8_0> blocks(values.size() / kQ8_0BlockElements);
    quantize_q8_0(values.data(), blocks.data(), rows * in);
    dequantize_q8_0(blocks.data(), values.data(), rows * in);
    std::vector<float> stored(values.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < in; ++k) {
        stored[transposed ? k * rows + r : r * in + k] = values[r * in + k];
      }
    }
    writer.add_f32(e.name, e.shape, stored);
  }
  std::filesystem::copy_file(source + "/config.json", dir.path() / "config.json");
  write_file((dir.path() / "model.safetensors").string(), writer.serialize());
  return dir.path().string();
}

}  // namespace attnscope::testing
