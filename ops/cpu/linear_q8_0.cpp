// linear_q8_0 (ops/cpu/linear_q8_0.h): the decode GEMV at three cpu levels, and prefill through
// dequantized panels and Eigen's GEMM.
#include "ops/cpu/linear_q8_0.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/cpu/eigen_maps.h"
#include "ops/cpu/output_blocks.h"
#include "runtime/cpu_features.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::ops::cpu {

namespace {

constexpr std::int64_t kBlock = kQ8_0BlockElements;
// As in the f32 linear (ops/cpu/linear.cpp): below this many rows, read each weight once for all.
constexpr std::int64_t kGemmMinRows = 16;
// Weight rows dequantized at a time for the GEMM: 128 rows of 768 to 3072 values (0.4 to 1.5 MB)
// stay in this machine's 1 MB-per-core L2 or close to it.
constexpr std::int64_t kPanelRows = 128;

// The dot product of one q8_0 weight row (`blocks` blocks) with one quantized input row (bytes
// qx, one scale per block in dx).
using RowDot = float (*)(const BlockQ8_0* w, const std::int8_t* qx, const float* dx,
                         std::int64_t blocks);

float row_dot_portable(const BlockQ8_0* w, const std::int8_t* qx, const float* dx,
                       std::int64_t blocks) {
  float sum = 0.0f;
  for (std::int64_t b = 0; b < blocks; ++b) {
    std::int32_t products = 0;
    for (std::int64_t i = 0; i < kBlock; ++i) {
      products += static_cast<std::int32_t>(w[b].q[i]) * qx[b * kBlock + i];
    }
    sum += f16_to_f32(w[b].scale) * dx[b] * static_cast<float>(products);
  }
  return sum;
}

#if defined(__x86_64__)

// The 8 int32 sums of 4 adjacent products qw[i] qx[i] of one block (see the header for the sign
// trick and why nothing saturates).
__attribute__((target("avx2"))) inline __m256i block_products_avx2(const std::int8_t* qw,
                                                                   const std::int8_t* qx) {
  const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qw));
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qx));
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// The sum of the 8 lanes, in 3 rounds of pairwise additions.
__attribute__((target("avx2"))) inline float horizontal_sum_avx2(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

__attribute__((target("avx2,fma,f16c"))) float row_dot_avx2(const BlockQ8_0* w,
                                                            const std::int8_t* qx, const float* dx,
                                                            std::int64_t blocks) {
  __m256 sum = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    const __m256i products = block_products_avx2(w[b].q, qx + b * kBlock);
    const __m256 scale = _mm256_set1_ps(_cvtsh_ss(w[b].scale) * dx[b]);
    sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(products), scale, sum);
  }
  return horizontal_sum_avx2(sum);
}

// Two blocks per 512-bit register. AVX-512 BW has no vpsignb: qw's sign goes onto qx by
// negating qx under the mask of qw's negative bytes.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) float row_dot_avx512(
    const BlockQ8_0* w, const std::int8_t* qx, const float* dx, std::int64_t blocks) {
  __m512 sum = _mm512_setzero_ps();
  const __m512i ones = _mm512_set1_epi16(1);
  std::int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    const __m512i weights = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].q))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b + 1].q)), 1);
    const __m512i inputs = _mm512_loadu_si512(qx + b * kBlock);
    const __mmask64 negative = _mm512_movepi8_mask(weights);
    const __m512i signed_inputs =
        _mm512_mask_sub_epi8(inputs, negative, _mm512_setzero_si512(), inputs);
    const __m512i pairs = _mm512_maddubs_epi16(_mm512_abs_epi8(weights), signed_inputs);
    const __m512i products = _mm512_madd_epi16(pairs, ones);  // lanes 0-7: block b, 8-15: b + 1
    const __m512 scales =
        _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(_cvtsh_ss(w[b].scale) * dx[b]),
                             _mm512_set1_ps(_cvtsh_ss(w[b + 1].scale) * dx[b + 1]));
    sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(products), scales, sum);
  }
  // The 16 lanes through memory (GCC 12's register folds warn inside its own headers).
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total =
      horizontal_sum_avx2(_mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8)));
  if (b < blocks) total += row_dot_avx2(w + b, qx + b * kBlock, dx + b, blocks - b);
  return total;
}

#endif

RowDot row_dot_for(CpuLevel level) {
#if defined(__x86_64__)
  if (level == CpuLevel::Avx512) return row_dot_avx512;
  if (level == CpuLevel::Avx2) return row_dot_avx2;
#endif
  (void)level;
  return row_dot_portable;
}

// Decode: quantize the input rows once, then each thread streams its block of weight rows,
// applying each row to every input row while it is in L1.
void matrix_vector_rows(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b,
                        float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                        bool accumulate) {
  const std::int64_t blocks = in / kBlock;
  std::vector<std::int8_t> qx(static_cast<std::size_t>(rows * in));
  std::vector<float> dx(static_cast<std::size_t>(rows * blocks));
  quantize_activations_q8_0(x, qx.data(), dx.data(), rows * in);
  const RowDot row_dot = row_dot_for(cpu_level());
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
    for (std::int64_t o = first; o < first + width; ++o) {
      const BlockQ8_0* weight_row = w + o * blocks;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float dot = row_dot(weight_row, qx.data() + r * in, dx.data() + r * blocks, blocks) +
                          (b ? b[o] : 0.0f);
        y[r * outputs + o] = accumulate ? y[r * outputs + o] + dot : dot;
      }
    }
  });
}

// `count` weight rows of `in` values, dequantized into `panel` (row-major).
void dequantize_rows(const BlockQ8_0* w, std::int64_t count, std::int64_t in, float* panel) {
  for (std::int64_t block = 0; block < count * (in / kBlock); ++block) {
    const float d = f16_to_f32(w[block].scale);
    for (std::int64_t i = 0; i < kBlock; ++i) {
      panel[block * kBlock + i] = d * static_cast<float>(w[block].q[i]);
    }
  }
}

// Prefill: each thread takes a block of output columns and walks it in panels of kPanelRows
// weight rows, each dequantized to f32 and multiplied by Eigen's (single-threaded) GEMM.
void gemm_dequantized_panels(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b,
                             float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                             bool accumulate) {
  const ConstMatrixMap input(x, rows, in);
  const std::int64_t blocks = in / kBlock;
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
    // One buffer per thread, kept between calls: a fresh 1.5 MB allocation would fault its pages
    // in on every call.
    thread_local std::vector<float> panel;
    panel.resize(static_cast<std::size_t>(kPanelRows * in));
    for (std::int64_t p = first; p < first + width; p += kPanelRows) {
      const std::int64_t count = std::min(kPanelRows, first + width - p);
      dequantize_rows(w + p * blocks, count, in, panel.data());
      const ConstMatrixMap weight(panel.data(), count, in);
      Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>> result(
          y + p, rows, count, Eigen::OuterStride<>(outputs));
      if (accumulate) {
        result.noalias() += input * weight.transpose();
      } else {
        result.noalias() = input * weight.transpose();
      }
      if (b) result.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(b + p, count);
    }
  });
}

}  // namespace

void quantize_activations_q8_0(const float* x, std::int8_t* q, float* scales, std::int64_t n) {
  for (std::int64_t block = 0; block < n / kBlock; ++block) {
    const float* values = x + block * kBlock;
    std::int8_t* bytes = q + block * kBlock;
    float max_abs = 0.0f;
    bool finite = true;
    for (std::int64_t i = 0; i < kBlock; ++i) {
      max_abs = std::max(max_abs, std::fabs(values[i]));
      finite = finite && std::isfinite(values[i]);
    }
    if (!finite) {
      scales[block] = std::numeric_limits<float>::quiet_NaN();
      std::fill(bytes, bytes + kBlock, std::int8_t{0});
      continue;
    }
    scales[block] = max_abs / 127.0f;
    const float inverse = max_abs == 0.0f ? 0.0f : 127.0f / max_abs;
    for (std::int64_t i = 0; i < kBlock; ++i) {
      // |values[i] * inverse| <= 127 (1 + u)^2 rounds to at most 127: no clamp needed.
      bytes[i] = static_cast<std::int8_t>(std::nearbyint(values[i] * inverse));
    }
  }
}

void linear_q8_0(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b, float* y,
                 std::int64_t rows, std::int64_t in, std::int64_t outputs, bool accumulate) {
  check(in % kBlock == 0, "linear", [&] {
    return "q8_0 weights need an input width that is a multiple of " + std::to_string(kBlock) +
           ", got " + std::to_string(in);
  });
  if (rows < kGemmMinRows) {
    matrix_vector_rows(ctx, x, w, b, y, rows, in, outputs, accumulate);
  } else {
    gemm_dequantized_panels(ctx, x, w, b, y, rows, in, outputs, accumulate);
  }
}

}  // namespace attnscope::ops::cpu
