// What the model suites of both families (tests/test_gpt2.cpp, tests/test_llama.cpp) check a
// LanguageModel with: greedy generation as `attnscope generate` runs it, every logit of a
// fixture's prefill, the fixture's reference logits, their largest difference, and a checkpoint
// rewritten with its matrices replaced by what q8_0 stores for them. A reference.json holds
// input_ids [B][T], logits [B][T][V] and greedy {prompt_ids, generated_ids} (both fixture sets).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "runtime/q8_0.h"
#include "runtime/safetensors.h"
#include "runtime/sampler.h"
#include "safetensors_writer.h"

namespace attnscope::testing {

// Greedy generation through prefill + one-token decode steps, as `attnscope generate` does it.
inline std::vector<std::int32_t> greedy(Context& ctx, const LanguageModel& model,
                                        const std::vector<std::int32_t>& prompt, int new_tokens) {
  KVCache cache = model.new_cache(ctx, 1, static_cast<std::int64_t>(prompt.size()) + new_tokens);
  Sampler sampler(SamplingOptions{});
  Tensor logits = model.forward(ctx, prompt, 1, cache);
  const auto vocab = static_cast<std::size_t>(model.config().vocab_size);
  std::vector<std::int32_t> out;
  for (int i = 0; i < new_tokens; ++i) {
    const std::int32_t next = sampler.sample({logits.data<float>(), vocab});
    out.push_back(next);
    if (i + 1 < new_tokens) logits = model.forward(ctx, {&next, 1}, 1, cache);
  }
  return out;
}

// Every logit of a prefill over the fixture's input ids, as float64 [B * T * V].
inline std::vector<double> all_logits(Context& ctx, const LanguageModel& model,
                                      const nlohmann::json& reference) {
  const auto ids = reference["input_ids"].get<std::vector<std::vector<std::int32_t>>>();
  std::vector<std::int32_t> flat;
  for (const auto& row : ids) flat.insert(flat.end(), row.begin(), row.end());
  const auto batch = static_cast<std::int64_t>(ids.size());
  KVCache cache = model.new_cache(ctx, batch, static_cast<std::int64_t>(ids[0].size()));
  const Tensor logits = model.forward(ctx, flat, batch, cache, true);
  return {logits.data<float>(), logits.data<float>() + logits.numel()};
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
