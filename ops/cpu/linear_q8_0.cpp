// linear_q8_0 (ops/cpu/linear_q8_0.h): the activation quantizer, the decode GEMV at three cpu
// levels (at avx512vnni and avx512bf16 from 6 rows on, ops/cpu/decode_q8_0_vnni.cpp), and the
// choice of prefill GEMM: on byte dot products at avx512vnni and avx512bf16
// (ops/cpu/gemm_q8_0_vnni.cpp), on AMX's bf16 tiles at amx (ops/cpu/gemm_amx.cpp), else through
// dequantized weight blocks and the f32 GEMM (ops/cpu/widened_gemm.h).
#include "ops/cpu/linear_q8_0.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/cpu/decode_q8_0_vnni.h"
#include "ops/cpu/dot_tile.h"
#include "ops/cpu/gemm_amx.h"
#include "ops/cpu/gemm_q8_0_vnni.h"
#include "ops/cpu/output_blocks.h"
#include "ops/cpu/widened_gemm.h"
#include "runtime/cpu_features.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::ops::cpu {

namespace {

constexpr std::int64_t kBlock = kQ8_0BlockElements;
// The dot products of one q8_0 weight row (`blocks` blocks) with kRows quantized input rows
// (row r: bytes qx + r * blocks * 32, scales dx + r * blocks), into dots[0, kRows). Each weight
// block is loaded (and its scale widened) once for all kRows rows.
// Input rows per call, at most: every row's accumulators stay in registers. The AVX-512 levels
// take 8 (16 accumulators of their 32 vector registers): each weight block's load, sign mask and
// scale then serve 8 rows instead of twice 4 (GPT-2 q8_0 batch-8 decode on this machine's Xeon,
// 2 threads, 3 interleaved rounds: 1.14x). avx2 (16 registers) and portable take 4: 8 rows spill
// there (0.82x under ATTNSCOPE_CPU_LEVEL=avx2, same runs).
constexpr int kMaxRowGroup = 8;
using RowDots = void (*)(const BlockQ8_0* w, const std::int8_t* qx, const float* dx,
                         std::int64_t blocks, float* dots);

template <int kRows>
void row_dots_portable(const BlockQ8_0* w, const std::int8_t* qx, const float* dx,
                       std::int64_t blocks, float* dots) {
  float sums[kRows] = {};
  for (std::int64_t b = 0; b < blocks; ++b) {
    const float dw = f16_to_f32(w[b].scale);
    for (int r = 0; r < kRows; ++r) {
      const std::int8_t* inputs = qx + (r * blocks + b) * kBlock;
      std::int32_t products = 0;
      for (std::int64_t i = 0; i < kBlock; ++i) {
        products += static_cast<std::int32_t>(w[b].q[i]) * inputs[i];
      }
      sums[r] += dw * dx[r * blocks + b] * static_cast<float>(products);
    }
  }
  for (int r = 0; r < kRows; ++r) dots[r] = sums[r];
}

#if defined(__x86_64__)

// The 32 products of one weight block (qw in `weights`, |qw| in `magnitudes`) with the 32 input
// bytes at `inputs`, summed by fours into 8 int32 lanes: qx takes qw's sign (vpsignb), vpmaddubsw
// sums pairs of products, vpmaddwd against ones pairs of those.
__attribute__((target("avx2"))) inline __m256i product_quads_avx2(__m256i weights,
                                                                  __m256i magnitudes,
                                                                  const std::int8_t* inputs) {
  const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(inputs));
  const __m256i pairs = _mm256_maddubs_epi16(magnitudes, _mm256_sign_epi8(bytes, weights));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// One block per step: |qw| once, then per row its product quads (above) scaled by dw dx into 8
// f32 lanes. The weights are prefetched kWeightPrefetchBytes ahead (output_blocks.h), once a
// block: at about a dozen instructions a block a core asks for too few lines for the hardware
// prefetcher alone. Measured (Zen 3, 2 threads, tg64, interleaved rounds,
// docs/results/2026-12-07-avx2-q8-row-prefetch/): batch-1 decode 1.16x (1.03-1.25) GPT-2, 1.21x
// (0.99-1.37) SmolLM2 shape in 6 rounds, when batch 1 ran here (it takes stream_dots_avx2, below,
// since); batch 4 1.03-1.05x, batch 8 unchanged (there the integer arithmetic, not reading,
// bounds the step: four_row_dots_avx2 below).
template <int kRows>
__attribute__((target("avx2,fma,f16c"))) void row_dots_avx2(const BlockQ8_0* w,
                                                            const std::int8_t* qx, const float* dx,
                                                            std::int64_t blocks, float* dots) {
  __m256 sums[kRows];
  for (int r = 0; r < kRows; ++r) sums[r] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    prefetch_weights(reinterpret_cast<const char*>(w + b) + kWeightPrefetchBytes);
    const __m256i weights = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].q));
    const __m256i magnitudes = _mm256_sign_epi8(weights, weights);
    const float dw = _cvtsh_ss(w[b].scale);
    for (int r = 0; r < kRows; ++r) {
      const __m256i quads = product_quads_avx2(weights, magnitudes, qx + (r * blocks + b) * kBlock);
      sums[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(quads), _mm256_set1_ps(dw * dx[r * blocks + b]),
                                sums[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) dots[r] = sum8(sums[r]);
}

// One input row against kStreams weight rows `stride` blocks apart (output_blocks.h's
// matrix_vector_streams: why streams), each with its own 8 f32 sums, the input's 32 bytes loaded
// once a block for all of them. No software prefetch, unlike row_dots_avx2 (which the streams
// replace at batch 1: 1.20-1.21x, docs/results/2026-12-07-avx2-decode-streams/).
template <int kStreams>
__attribute__((target("avx2,fma,f16c"))) void stream_dots_avx2(const BlockQ8_0* w,
                                                               std::int64_t stride,
                                                               const std::int8_t* qx,
                                                               const float* dx, std::int64_t blocks,
                                                               float* dots) {
  __m256 sums[kStreams];
  for (int s = 0; s < kStreams; ++s) sums[s] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    for (int s = 0; s < kStreams; ++s) {
      const BlockQ8_0& block = w[s * stride + b];
      const __m256i weights = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.q));
      const __m256i magnitudes = _mm256_sign_epi8(weights, weights);
      const __m256i quads = product_quads_avx2(weights, magnitudes, qx + b * kBlock);
      sums[s] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(quads),
                                _mm256_set1_ps(_cvtsh_ss(block.scale) * dx[b]), sums[s]);
    }
  }
  for (int s = 0; s < kStreams; ++s) dots[s] = sum8(sums[s]);
}

// Four input rows, their sums side by side: per block the four rows' product quads, then two
// rounds of vphaddd put the sum of row r's lanes 0-3 in lane r and of its lanes 4-7 in lane
// 4 + r, so that one conversion, one scale vector (dw times the rows' dx, each twice) and one FMA
// serve the four rows, where row_dots_avx2 takes per row a conversion, a scalar scale product, a
// broadcast and an FMA. The integer sums are the same; the f32 sum over blocks keeps 2 partial sums
// a row instead of 8. The kernel of a decode step of 4 to 15 rows, bound by this arithmetic.
// Measured (Zen 3, 2 threads, tg64, 8 interleaved rounds,
// docs/results/2026-12-07-avx2-q8-four-rows/): batch 4 1.07x (0.92-1.54) GPT-2, 1.09x
// (0.99-1.14) SmolLM2 shape, batch 8 1.05x and 1.00x, within the noise. Only whole groups of four
// take it: for 2 or 3 rows the missing ones would cost as much as real ones.
__attribute__((target("avx2,fma,f16c"))) void four_row_dots_avx2(const BlockQ8_0* w,
                                                                 const std::int8_t* qx,
                                                                 const float* dx,
                                                                 std::int64_t blocks, float* dots) {
  __m256 sums = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < blocks; ++b) {
    prefetch_weights(reinterpret_cast<const char*>(w + b) + kWeightPrefetchBytes);
    const __m256i weights = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].q));
    const __m256i magnitudes = _mm256_sign_epi8(weights, weights);
    __m256i quads[4];
    for (int r = 0; r < 4; ++r) {
      quads[r] = product_quads_avx2(weights, magnitudes, qx + (r * blocks + b) * kBlock);
    }
    const __m256i row_sums = _mm256_hadd_epi32(_mm256_hadd_epi32(quads[0], quads[1]),
                                               _mm256_hadd_epi32(quads[2], quads[3]));
    const __m128 input_scales =
        _mm_setr_ps(dx[b], dx[blocks + b], dx[2 * blocks + b], dx[3 * blocks + b]);
    const __m256 scales = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(w[b].scale)),
                                        _mm256_set_m128(input_scales, input_scales));
    sums = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_sums), scales, sums);
  }
  _mm_storeu_ps(dots, _mm_add_ps(_mm256_castps256_ps128(sums), _mm256_extractf128_ps(sums, 1)));
}

// Four blocks per step in two 512-bit registers (lanes 0-7: block b, 8-15: block b + 1; then
// b + 2 and b + 3), each with its own accumulator; then, where blocks % 4 >= 2, one last pair the
// same way; an odd last block goes through the avx2 kernel. AVX-512 BW has no vpsignb: qw's sign
// goes onto qx by negating qx under the mask of qw's negative bytes. The four scales dw dx of a
// step are formed in one 128-bit multiply (the f16 dw widened by vcvtph2ps, the dx read as 4
// contiguous floats) and spread to 8 lanes each by vpermps, instead of four scalar conversions,
// multiplies and broadcasts. Measured on this machine's Xeon (one thread, interleaved, loaded):
// 1.2-1.4x the two-block version with scalar scales. The weights are prefetched ahead
// (kWeightPrefetchBytes, output_blocks.h): the stream of 34-byte blocks is what decode waits on,
// and on that Xeon the prefetch raised the out-of-cache LM head's rate by a further ~1.3x. On AMD
// it does the opposite (kPrefetchWeights below). The last pair
// matters for SmolLM2, whose 576 inputs are 18 blocks: taking blocks 17 and 18 in one pair step
// instead of two calls of the avx2 kernel made its q8_0 decode 1.08x at batch 1 and 1.20x at
// batch 8 (2-core Xeon, 3 interleaved rounds, docs/results/2026-12-03-q8-pair-tail); GPT-2, whose
// widths are multiples of 4 blocks, unchanged.
// With kVnni (the avx512vnni level) one vpdpbusd forms each lane's sum of 4 byte products,
// where vpmaddubsw + vpmaddwd take two instructions; the sums are the same integers (the int16
// pairs of vpmaddubsw never saturate, see linear_q8_0.h), so both levels give identical results.
// Whether step_avx512 prefetches its weights: not on AMD. On a Zen 4 (2 threads, synthetic:gpt2
// q8_0, 3 interleaved rounds, docs/results/2026-12-04-zen4-q8-prefetch/) dropping the prefetch
// made batch-1 decode 1.54x (1.23-1.69; 144-179 against 221-244 tokens/s), batch 4 1.28x, and
// left batches 8 and 16 unchanged (0.97x, 1.00x). Tried there first: half the prefetches (one a
// step) recovered most of it, prefetching 32 KB ahead instead of 8 almost none. The 16-bit
// kernels' prefetch still pays on that Zen 4 (bf16 and f16 at batch 8: ~1.5x) and is kept. Other
// AMD cores than Zen 4 are not measured.
const bool kPrefetchWeights = !cpu_features().amd;

// The bytes of blocks pair[0] and pair[1] in one register.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2"))) inline __m512i load_pair(
    const BlockQ8_0* pair) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair[0].q))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair[1].q)), 1);
}

// One step of row_dots_avx512: blocks [b, b + 2 kPairs) (kPairs = 2 in the main loop, 1 for
// a last pair), each pair of blocks in one register with an accumulator of its own, against every
// row. A last pair reads its two scales dx as one 64-bit load, not four floats past the row.
template <int kRows, bool kVnni, int kPairs>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"))) inline void
step_avx512(const BlockQ8_0* w, const std::int8_t* qx, const float* dx, std::int64_t blocks,
            std::int64_t b, __m512 (&sums)[kRows][2]) {
  const __m512i ones = _mm512_set1_epi16(1);
  const __m512i first_pair = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i second_pair = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2);
  // 2 kPairs blocks are 68 kPairs bytes: a line (two in the main loop) a step, the hardware
  // prefetcher filling the odd gap
  for (int line = 0; kPrefetchWeights && line < kPairs; ++line) {
    prefetch_weights(reinterpret_cast<const char*>(w + b) + kWeightPrefetchBytes + 64 * line);
  }
  __m512i magnitudes[kPairs];
  __mmask64 negative[kPairs];
  for (int pair = 0; pair < kPairs; ++pair) {
    const __m512i weights = load_pair(w + b + 2 * pair);
    negative[pair] = _mm512_movepi8_mask(weights);
    magnitudes[pair] = _mm512_abs_epi8(weights);
  }
  // The f16 scales of the step's blocks (a last pair: two, then zeros), widened together.
  std::int16_t scale_bits[4] = {};
  for (int block = 0; block < 2 * kPairs; ++block) {
    scale_bits[block] = static_cast<std::int16_t>(w[b + block].scale);
  }
  const __m128 weight_scales = _mm_cvtph_ps(
      _mm_setr_epi16(scale_bits[0], scale_bits[1], scale_bits[2], scale_bits[3], 0, 0, 0, 0));
  for (int r = 0; r < kRows; ++r) {
    const float* row_scales = dx + r * blocks + b;
    const __m128 input_scales =
        kPairs == 2
            ? _mm_loadu_ps(row_scales)
            : _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row_scales)));
    const __m512 scales = _mm512_castps128_ps512(_mm_mul_ps(weight_scales, input_scales));
    const __m512 spread[2] = {_mm512_permutexvar_ps(first_pair, scales),
                              _mm512_permutexvar_ps(second_pair, scales)};
    for (int pair = 0; pair < kPairs; ++pair) {
      const __m512i inputs = _mm512_loadu_si512(qx + (r * blocks + b + 2 * pair) * kBlock);
      const __m512i signed_inputs =
          _mm512_mask_sub_epi8(inputs, negative[pair], _mm512_setzero_si512(), inputs);
      const __m512i quads =
          kVnni ? _mm512_dpbusd_epi32(_mm512_setzero_si512(), magnitudes[pair], signed_inputs)
                : _mm512_madd_epi16(_mm512_maddubs_epi16(magnitudes[pair], signed_inputs), ones);
      sums[r][pair] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(quads), spread[pair], sums[r][pair]);
    }
  }
}

// Both instantiations carry the avx512vnni target (the intrinsic needs it in its caller); only
// the kVnni one contains the instruction, and only the avx512vnni level and above call it.
template <int kRows, bool kVnni>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"))) void row_dots_avx512(
    const BlockQ8_0* w, const std::int8_t* qx, const float* dx, std::int64_t blocks, float* dots) {
  __m512 sums[kRows][2];
  for (int r = 0; r < kRows; ++r) sums[r][0] = sums[r][1] = _mm512_setzero_ps();
  std::int64_t b = 0;
  for (; b + 4 <= blocks; b += 4) step_avx512<kRows, kVnni, 2>(w, qx, dx, blocks, b, sums);
  if (b + 2 <= blocks) {
    step_avx512<kRows, kVnni, 1>(w, qx, dx, blocks, b, sums);
    b += 2;
  }
  float tail[kRows] = {};
  if (b < blocks) {
    // The last block of an odd count: rows of a one-block slice are still `blocks` blocks apart.
    for (int r = 0; r < kRows; ++r) {
      row_dots_avx2<1>(w + b, qx + (r * blocks + b) * kBlock, dx + r * blocks + b, 1, tail + r);
    }
  }
  for (int r = 0; r < kRows; ++r) dots[r] = sum16(_mm512_add_ps(sums[r][0], sums[r][1])) + tail[r];
}

#endif

// The kernels of one level for 1 to `group` input rows (index: rows - 1).
struct LevelKernels {
  std::int64_t group;
  RowDots for_rows[kMaxRowGroup];
};

LevelKernels kernels_for(CpuLevel level) {
#if defined(__x86_64__)
  if (level >= CpuLevel::Avx512Vnni) {
    return {8,
            {row_dots_avx512<1, true>, row_dots_avx512<2, true>, row_dots_avx512<3, true>,
             row_dots_avx512<4, true>, row_dots_avx512<5, true>, row_dots_avx512<6, true>,
             row_dots_avx512<7, true>, row_dots_avx512<8, true>}};
  }
  if (level == CpuLevel::Avx512) {
    return {8,
            {row_dots_avx512<1, false>, row_dots_avx512<2, false>, row_dots_avx512<3, false>,
             row_dots_avx512<4, false>, row_dots_avx512<5, false>, row_dots_avx512<6, false>,
             row_dots_avx512<7, false>, row_dots_avx512<8, false>}};
  }
  if (level == CpuLevel::Avx2) {
    return {4, {row_dots_avx2<1>, row_dots_avx2<2>, row_dots_avx2<3>, four_row_dots_avx2}};
  }
#endif
  (void)level;
  return {4,
          {row_dots_portable<1>, row_dots_portable<2>, row_dots_portable<3>, row_dots_portable<4>}};
}

// Decode: quantize the input rows once, then each thread streams its block of weight rows,
// applying each row to every input row (in groups of the level's kernels) while it is in L1.
void matrix_vector_rows(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b,
                        float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                        bool accumulate) {
  const std::int64_t blocks = in / kBlock;
  const QuantizedRows quantized_rows = quantize_rows(ctx, x, rows, in, false);
  const std::int8_t* const quantized = quantized_rows.bytes;
  const float* const scales = quantized_rows.scales;
  const CpuLevel level = cpu_level();
  const LevelKernels kernels = kernels_for(level);
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
#if defined(__x86_64__)
    if (rows == 1 && level == CpuLevel::Avx2) {
      matrix_vector_streams(first, width, b, y, accumulate,
                            [&](std::int64_t o, std::int64_t stride, auto streams, float* sums) {
                              stream_dots_avx2<decltype(streams)::value>(
                                  w + o * blocks, stride * blocks, quantized, scales, blocks, sums);
                            });
      return;
    }
#endif
    float dots[kMaxRowGroup];
    for (std::int64_t o = first; o < first + width; ++o) {
      for (std::int64_t r0 = 0; r0 < rows; r0 += kernels.group) {
        const std::int64_t count = std::min(kernels.group, rows - r0);
        kernels.for_rows[count - 1](w + o * blocks, quantized + r0 * in, scales + r0 * blocks,
                                    blocks, dots);
        for (std::int64_t r = r0; r < r0 + count; ++r) {
          store_output(y[r * outputs + o], dots[r - r0], b, o, accumulate);
        }
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

// One block of 32 values, the spec: quantize_block_avx512 must give the same bytes and scale.
void quantize_block(const float* values, std::int8_t* bytes, float* scale) {
  float max_abs = 0.0f;
  bool finite = true;
  for (std::int64_t i = 0; i < kBlock; ++i) {
    max_abs = std::max(max_abs, std::fabs(values[i]));
    finite = finite && std::isfinite(values[i]);
  }
  if (!finite) {
    *scale = std::numeric_limits<float>::quiet_NaN();
    std::fill(bytes, bytes + kBlock, std::int8_t{0});
    return;
  }
  const float inverse = 127.0f / max_abs;
  if (std::isinf(inverse)) {
    // max_abs is 0, or below 127 / FLT_MAX (~3.7e-37, under 32 times f32's smallest normal):
    // the inverse overflows (and x * inverse would be an infinity, no byte at all). Such a block
    // is zeros, scale 0: it differs from x by at most 3.7e-37 per value.
    *scale = 0.0f;
    std::fill(bytes, bytes + kBlock, std::int8_t{0});
    return;
  }
  *scale = max_abs / 127.0f;
  for (std::int64_t i = 0; i < kBlock; ++i) {
    // |values[i] * inverse| <= 127 (1 + u)^2 rounds to at most 127: no clamp needed.
    bytes[i] = static_cast<std::int8_t>(std::nearbyint(values[i] * inverse));
  }
}

#if defined(__x86_64__)
// The same block 16 lanes at a time: the maximum is exact in any order, the scale and inverse
// are the same two f32 divisions, and vcvtps2dq rounds to nearest even as nearbyint does in the
// default rounding mode. Prefill quantizes every prompt position (ops/cpu/gemm_q8_0_vnni.cpp),
// where the scalar loop would call the C library's nearbyint once per value.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void quantize_block_avx512(const float* values,
                                                                                std::int8_t* bytes,
                                                                                float* scale) {
  const __m512 halves[2] = {_mm512_loadu_ps(values), _mm512_loadu_ps(values + 16)};
  const __m512 largest = _mm512_set1_ps(std::numeric_limits<float>::max());
  const __m512 magnitudes[2] = {_mm512_abs_ps(halves[0]), _mm512_abs_ps(halves[1])};
  // false for infinities and NaN
  const __mmask16 finite = _mm512_cmp_ps_mask(magnitudes[0], largest, _CMP_LE_OQ) &
                           _mm512_cmp_ps_mask(magnitudes[1], largest, _CMP_LE_OQ);
  if (finite != 0xFFFF) {
    *scale = std::numeric_limits<float>::quiet_NaN();
    std::fill(bytes, bytes + kBlock, std::int8_t{0});
    return;
  }
  const float max_abs = _mm512_reduce_max_ps(_mm512_max_ps(magnitudes[0], magnitudes[1]));
  if (std::isinf(127.0f / max_abs)) {  // as in quantize_block
    *scale = 0.0f;
    std::fill(bytes, bytes + kBlock, std::int8_t{0});
    return;
  }
  *scale = max_abs / 127.0f;
  const __m512 inverse = _mm512_set1_ps(127.0f / max_abs);
  for (int half = 0; half < 2; ++half) {
    const __m512i q = _mm512_cvt_roundps_epi32(_mm512_mul_ps(halves[half], inverse),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes + 16 * half), _mm512_cvtepi32_epi8(q));
  }
}
#endif

// n values in blocks, 16 lanes at a time with `vector` (read by the caller from cpu_level(),
// outside any parallel region).
void quantize_blocks(const float* x, std::int8_t* q, float* scales, std::int64_t n, bool vector) {
  for (std::int64_t block = 0; block < n / kBlock; ++block) {
#if defined(__x86_64__)
    if (vector) {
      quantize_block_avx512(x + block * kBlock, q + block * kBlock, scales + block);
      continue;
    }
#else
    (void)vector;
#endif
    quantize_block(x + block * kBlock, q + block * kBlock, scales + block);
  }
}

}  // namespace

void quantize_activations_q8_0(const float* x, std::int8_t* q, float* scales, std::int64_t n) {
  quantize_blocks(x, q, scales, n, cpu_level() >= CpuLevel::Avx512);
}

QuantizedRows quantize_rows(const Context& ctx, const float* x, std::int64_t rows, std::int64_t in,
                            bool offset_by_128) {
  // The calling thread's buffers (a decode step makes ~50 calls). The worker threads read them
  // through the pointers below (in the loop, the names bytes and scales would be each worker's
  // own, empty, thread_local vectors).
  thread_local std::vector<std::int8_t> bytes;
  thread_local std::vector<float> scales;
  const std::int64_t blocks = in / kBlock;
  bytes.resize(static_cast<std::size_t>(rows * in));
  scales.resize(static_cast<std::size_t>(rows * blocks));
  std::int8_t* const q = bytes.data();
  float* const dx = scales.data();
  // From 64K values on (a prompt chunk of 86 rows at GPT-2's width), the threads share the
  // rows; a decode step's few rows are not worth a fork and join.
  const bool shared = rows * in >= (std::int64_t{1} << 16);
  const bool vector = cpu_level() >= CpuLevel::Avx512;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static) if (shared)
  for (std::int64_t r = 0; r < rows; ++r) {
    quantize_blocks(x + r * in, q + r * in, dx + r * blocks, in, vector);
    if (!offset_by_128) continue;
    for (std::int64_t k = r * in; k < (r + 1) * in; ++k) {
      q[k] = static_cast<std::int8_t>(static_cast<std::uint8_t>(q[k]) ^ 0x80u);
    }
  }
  return {q, dx};
}

void linear_q8_0(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b, float* y,
                 std::int64_t rows, std::int64_t in, std::int64_t outputs, bool accumulate) {
  check(in % kBlock == 0, "linear", [&] {
    return "q8_0 weights need an input width that is a multiple of " + std::to_string(kBlock) +
           ", got " + std::to_string(in);
  });
  const CpuLevel level = cpu_level();
  if (decode_in_lanes_avx2(level, DType::Q8_0, rows)) {
    decode_lanes_avx2(ctx, x, w, DType::Q8_0, b, y, rows, in, outputs, accumulate);
  } else if (rows < gemm_min_rows(level, DType::Q8_0)) {
    if (q8_0_decode_in_lanes(level, rows)) {
      decode_q8_0_vnni(ctx, x, w, b, y, rows, in, outputs, accumulate);
    } else {
      matrix_vector_rows(ctx, x, w, b, y, rows, in, outputs, accumulate);
    }
  } else if (level >= CpuLevel::Amx) {
    gemm_amx(ctx, x, w, DType::Q8_0, b, y, rows, in, outputs, accumulate);
  } else if (q8_0_prefill_quantizes_x(level)) {
    gemm_q8_0_vnni(ctx, x, w, b, y, rows, in, outputs, accumulate);
  } else {
    // Prefill: each thread dequantizes its block of weight rows to f32 once and runs one f32
    // GEMM over it (ops/cpu/widened_gemm.h says why whole blocks, not cache-sized panels).
    const std::int64_t blocks = in / kBlock;
    gemm_widened_weights(ctx, x, b, y, rows, in, outputs, accumulate,
                         [&](std::int64_t first, std::int64_t count, float* dst) {
                           dequantize_rows(w + first * blocks, count, in, dst);
                         });
  }
}

}  // namespace attnscope::ops::cpu
