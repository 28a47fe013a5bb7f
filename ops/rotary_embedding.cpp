// ops::rotary_embedding_: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains
// the pattern); and the host-side inverse frequencies and cos / sin table it reads.
#include "ops/rotary_embedding.h"

#include <cmath>
#include <numbers>
#include <string>

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

namespace {

// Positions are f32 in the angle product (as in transformers): exact up to 2^24.
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 24;

// transformers' _compute_llama3_parameters on f32 values, operation by operation. The python
// scalars it combines before touching the tensor (old / low, high - low) are doubles, rounded
// to f32 where they meet the tensor.
float llama3_rescaled(float inv_freq, const Llama3RopeScaling& scaling) {
  const auto factor = static_cast<float>(scaling.factor);
  const auto low_freq_factor = static_cast<float>(scaling.low_freq_factor);
  const auto old_context = static_cast<float>(scaling.original_max_position_embeddings);
  const auto low_freq_wavelen = static_cast<float>(
      static_cast<double>(scaling.original_max_position_embeddings) / scaling.low_freq_factor);
  const auto high_freq_wavelen = static_cast<float>(
      static_cast<double>(scaling.original_max_position_embeddings) / scaling.high_freq_factor);
  const auto factor_gap = static_cast<float>(scaling.high_freq_factor - scaling.low_freq_factor);

  const float wavelen = static_cast<float>(2.0 * std::numbers::pi) / inv_freq;
  if (wavelen < high_freq_wavelen) return inv_freq;          // high frequencies: kept
  if (wavelen > low_freq_wavelen) return inv_freq / factor;  // low frequencies: slowed down
  const float smooth = (old_context / wavelen - low_freq_factor) / factor_gap;
  return (1.0f - smooth) * inv_freq / factor + smooth * inv_freq;
}

}  // namespace

std::vector<float> rotary_inverse_frequencies(std::int64_t head_dim, double theta,
                                              const std::optional<Llama3RopeScaling>& scaling) {
  check(head_dim > 0 && head_dim % 2 == 0, "rotary_embedding", [&] {
    return "head_dim must be positive and even (pairs of halves), got " + std::to_string(head_dim);
  });
  check(theta > 0.0 && std::isfinite(theta), "rotary_embedding",
        [&] { return "rope_theta must be a positive number, got " + std::to_string(theta); });
  if (scaling) {
    check(scaling->factor > 0.0 && scaling->original_max_position_embeddings > 0 &&
              scaling->low_freq_factor > 0.0 &&
              scaling->high_freq_factor > scaling->low_freq_factor,
          "rotary_embedding",
          "llama3 rope_scaling needs factor > 0, original_max_position_embeddings > 0 and "
          "high_freq_factor > low_freq_factor > 0");
  }
  const auto base = static_cast<float>(theta);
  std::vector<float> inverse_frequencies(static_cast<std::size_t>(head_dim / 2));
  for (std::int64_t i = 0; i < head_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const auto power = static_cast<float>(std::pow(double{base}, double{exponent}));
    const float inv_freq = 1.0f / power;
    inverse_frequencies[static_cast<std::size_t>(i)] =
        scaling ? llama3_rescaled(inv_freq, *scaling) : inv_freq;
  }
  return inverse_frequencies;
}

RotaryTable rotary_table(const std::vector<float>& inverse_frequencies, std::int64_t positions,
                         Allocator& allocator) {
  check(0 < positions && positions <= kMaxPositions, "rotary_embedding", [&] {
    return "a table of " + std::to_string(positions) + " positions is outside 1.." +
           std::to_string(kMaxPositions) + " (positions are exact in f32 only up to 2^24)";
  });
  const auto half = static_cast<std::int64_t>(inverse_frequencies.size());
  RotaryTable table{Tensor::empty({positions, half}, DType::F32, allocator),
                    Tensor::empty({positions, half}, DType::F32, allocator)};
  float* cos = table.cos.data<float>();
  float* sin = table.sin.data<float>();
  for (std::int64_t pos = 0; pos < positions; ++pos) {
    for (std::int64_t i = 0; i < half; ++i) {
      const float angle =
          static_cast<float>(pos) * inverse_frequencies[static_cast<std::size_t>(i)];
      cos[pos * half + i] = static_cast<float>(std::cos(double{angle}));
      sin[pos * half + i] = static_cast<float>(std::sin(double{angle}));
    }
  }
  return table;
}

void rotary_embedding_(Context& ctx, Tensor& qkv, std::int64_t rotated_heads,
                       const Tensor& positions, const RotaryTable& table) {
  profiler::Scope scope(ctx, "rotary_embedding");
  const char* op = "rotary_embedding";
  const Device device = common_device(
      op,
      {{qkv, "qkv"}, {positions, "positions"}, {table.cos, "table.cos"}, {table.sin, "table.sin"}});
  require_float(qkv, device, op, "qkv");
  require_dtype(positions, DType::I32, op, "positions");
  require_dtype(table.cos, DType::F32, op, "table.cos");
  require_dtype(table.sin, DType::F32, op, "table.sin");
  check(qkv.rank() == 2 && table.cos.rank() == 2, op,
        "qkv must be [N, W] and the table [positions, D/2]");
  require_shape(table.sin, table.cos.shape(), op, "table.sin");
  const std::int64_t rows = qkv.dim(0);
  const std::int64_t head_dim = 2 * table.cos.dim(1);
  require_shape(positions, {rows}, op, "positions");
  check(rotated_heads >= 0 && rotated_heads * head_dim <= qkv.dim(1), op, [&] {
    return std::to_string(rotated_heads) + " heads of " + std::to_string(head_dim) +
           " do not fit in rows of " + std::to_string(qkv.dim(1));
  });
  // The cost in rotary_embedding.h: ~6 FLOPs per rotated pair, the rotated elements read and
  // written, a cos and a sin float per pair and row.
  const double pairs = static_cast<double>(rows * rotated_heads * head_dim / 2);
  scope.set_work(6.0 * pairs, pairs * static_cast<double>(2 * dtype_size(qkv.dtype())) +
                                  static_cast<double>(rows * head_dim) * sizeof(float));
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::rotary_embedding_(ctx, qkv, rotated_heads, positions, table);
    return;
  }
  const std::int32_t* pos = positions.data<std::int32_t>();
  for (std::int64_t n = 0; n < rows; ++n) {
    check(0 <= pos[n] && pos[n] < table.cos.dim(0), op, [&] {
      return "position " + std::to_string(pos[n]) + " is outside the table's " +
             std::to_string(table.cos.dim(0)) + " positions";
    });
  }
  cpu::rotary_embedding_(ctx, qkv, rotated_heads, positions, table);
}

}  // namespace attnscope::ops
