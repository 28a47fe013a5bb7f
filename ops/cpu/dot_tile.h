// The batch-decode kernels of the cpu linear layers (runtime/cpu_features.h's levels), for f32
// weights (ops/cpu/linear.cpp) and 16-bit ones (ops/cpu/linear_16bit.cpp): y = x W^T + b for a
// batch of input rows x, reading W from memory once. From the avx512 level on
// (matrix_vector_avx512) 1 row goes in streams, 2 and 3 one weight row at a time (both
// dot_block_avx512, below), 4 up to gemm_min_rows (output_blocks.h) in tiles; at the avx2
// level (matrix_vector_avx2, at the end of this file) 1 row in streams, 2 up to where
// decode_lanes_avx2.h takes over in the avx2 tiles (8 lanes, the same idea).
//
// A tile is 2 adjacent weight rows against kInputRows <= 8 input rows: 16 accumulators of 16
// lanes. Each weight vector is loaded (and widened, for 16-bit weights) once and multiplied into
// every input row, which stay in L1 or L2 (kInputRows x K floats); more rows take more tiles, the
// weight rows staying in L1 between them.
// Fewer rows (kTileMinRows, below) take the streams or dot_rows_avx512, f32 weights too
// (linear.cpp). bf16 weights at the avx512bf16 level have tiles of their own, on bf16 pairs
// (dot_tile_bf16_pairs).
// The 16 dot products are summed across their lanes together: sum_lanes16 (transpose16.h; 30
// permutes, 15 additions) leaves dot (i, r) in lane 8 i + r (a reduction per dot product costs
// about as much as a 768-wide dot product itself). Against a whole transpose16 and 15 additions
// (64 permutes): decode 1.02-1.03x from 8 to 32 rows, bf16 and f32 (Zen 4, 3 interleaved rounds,
// docs/results/2026-12-05-sum-lanes16/; at the edge of this machine's noise).
// The two rows are one contiguous stream, prefetched kWeightPrefetchBytes ahead: without it this
// kernel read at half the bandwidth. (The avx2 tiles pair rows far apart instead, each row's
// stream prefetched: WeightPairs below.)
// Cost per tile: 2 K weights read from memory, 2 kInputRows K multiply-adds.
// Measured (docs/results/2026-12-01-cpu-zen5, synthetic:gpt2 f32): batch 8 decode was ~40% of
// the memory bandwidth with a dot product per (weight row, input row) pair, Eigen's for f32 and
// a 4-row kernel for 16-bit weights, which this replaces.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops/cpu/output_blocks.h"
#include "ops/cpu/transpose16.h"
#include "runtime/dtype.h"
#include "runtime/q8_0.h"

namespace attnscope::ops::cpu {

// How each weight format turns 16 consecutive weights into 16 f32 lanes, whole or masked (the
// masked-off lanes 0). Widening is exact: bf16 is the top half of an f32; f16 converts with
// vcvtph2ps. The same formats (and Q8_0Rows below) load the rows of a KV cache in those types
// (ops/attention/cpu/decode_row.cpp) and convert them in bulk (ops/cpu/element_rows.cpp).
struct F32Weights {
  using Element = float;
  // avx2: 8 consecutive weights as 8 f32 lanes; one weight as f32, for the scalar tail.
  __attribute__((target("avx2,fma,f16c"))) static __m256 load8(const float* w) {
    return _mm256_loadu_ps(w);
  }
  static float one(float w) { return w; }
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 load(
      const float* w) {
    return _mm512_loadu_ps(w);
  }
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 load(
      const float* w, __mmask16 lanes) {
    return _mm512_maskz_loadu_ps(lanes, w);
  }
};
// The 16-bit formats load alike and differ in how 16 stored halves become f32 lanes (`widen`).
template <typename Format>
struct SixteenBitWeights {
  using Element = std::uint16_t;
  __attribute__((target("avx2,fma,f16c"))) static __m256 load8(const std::uint16_t* w) {
    return Format::widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  }
  static float one(std::uint16_t w) { return Format::one(w); }
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 load(
      const std::uint16_t* w) {
    return Format::widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  }
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 load(
      const std::uint16_t* w, __mmask16 lanes) {
    return Format::widen(_mm256_maskz_loadu_epi16(lanes, w));
  }
};
struct Bf16Format {
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 widen(
      __m256i bits) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  __attribute__((target("avx2,fma,f16c"))) static __m256 widen8(__m128i bits) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  static float one(std::uint16_t bits) { return bf16_to_f32(bits); }
  // The other way: 16 f32 lanes rounded to bf16 as dtype.h's f32_to_bf16 does (to nearest, ties
  // to even: add 0x7FFF plus the kept half's last bit to the f32's bits; NaN kept a quiet NaN).
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m256i narrow(
      __m512 values) {
    const __m512i bits = _mm512_castps_si512(values);
    const __m512i last_kept_bit =
        _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounding = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), last_kept_bit);
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, rounding), 16);
    const __m512i quiet_nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
    return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet_nan));
  }
  // The same with 8 lanes (AVX2): the 16-bit results packed from the 32-bit lanes of each half,
  // then the two halves' packed quarters side by side.
  __attribute__((target("avx2,fma,f16c"))) static __m128i narrow8(__m256 values) {
    const __m256i bits = _mm256_castps_si256(values);
    const __m256i last_kept_bit =
        _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounding = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), last_kept_bit);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, rounding), 16);
    const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(values, values, _CMP_UNORD_Q));
    const __m256i halves = _mm256_blendv_epi8(rounded, quiet_nan, nan);  // each below 2^16
    const __m256i packed = _mm256_packus_epi32(halves, halves);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));  // quarters 0 and 2
  }
};
struct F16Format {
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 widen(
      __m256i bits) {
    return _mm512_cvtph_ps(bits);
  }
  __attribute__((target("avx2,fma,f16c"))) static __m256 widen8(__m128i bits) {
    return _mm256_cvtph_ps(bits);
  }
  static float one(std::uint16_t bits) { return f16_to_f32(bits); }
};
using Bf16Weights = SixteenBitWeights<Bf16Format>;
using F16Weights = SixteenBitWeights<F16Format>;

// A row of q8_0 blocks (runtime/q8_0.h), 16 values from value c on (c a multiple of 16) as f32
// lanes (load8: 8 from a multiple of 8): the bytes sign-extended and converted, times the block's
// f16 scale (exact).
struct Q8_0Rows {
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 load(
      const BlockQ8_0* row, std::int64_t c) {
    const BlockQ8_0& block = row[c / kQ8_0BlockElements];
    const __m128i bytes =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.q + c % kQ8_0BlockElements));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)),
                         _mm512_set1_ps(_cvtsh_ss(block.scale)));
  }
  // 8 values from value c on (c a multiple of 8) as 8 f32 lanes, at the avx2 level.
  __attribute__((target("avx2,fma,f16c"))) static __m256 load8(const BlockQ8_0* row,
                                                               std::int64_t c) {
    const BlockQ8_0& block = row[c / kQ8_0BlockElements];
    const __m128i bytes =
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block.q + c % kQ8_0BlockElements));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)),
                         _mm256_set1_ps(_cvtsh_ss(block.scale)));
  }
};

inline __mmask16 first_lanes(std::int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1u);
}

// The first `count` of 8 lanes (none when count <= 0), as AVX2's masked loads and stores take
// them: all ones in each lane kept.
__attribute__((target("avx2,fma"))) inline __m256i first_lanes_avx2(std::int64_t count) {
  const int n = static_cast<int>(std::clamp<std::int64_t>(count, 0, 8));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The sum of 8 lanes, in 3 rounds of pairwise additions.
__attribute__((target("avx2,fma"))) inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The sum of 16 lanes: stored once, the two halves added as 8-lane vectors, then sum8's tree.
// (Not the 512-bit reduction or extraction intrinsics: GCC 12 warns about an uninitialised
// operand inside each of them.) A serial loop over the 16 lanes would cost about as much as
// the dot product of a 768-wide row itself.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) inline float sum16(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  return sum8(_mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8)));
}

// The kernel of fewer than kTileMinRows input rows, in two shapes: one weight row against 1 to 3
// input rows (dot_rows_avx512, below), or kWeightStreams weight rows far apart against one input
// row (the streams of batch 1, matrix_vector_avx512). sums[s * kInputRows + r] = dot(weight row
// s, input row r) for s < kWeightRows (weight rows `stride` apart) and r < kInputRows (input rows
// ldx apart). Two accumulators per (weight row, input row), 32 weights a round, the tail by masked
// loads into the first; each weight row's stream prefetched kWeightPrefetchBytes ahead (for the
// streams, without it, 3 rounds on a Zen 4: SmolLM2 shape 0.88-0.98x, GPT-2 1.02-1.07x;
// docs/results/2026-12-07-avx512-decode-streams/no-prefetch/). Both shapes sum a row's products in
// the same order, so a row's result is the same decoded alone as beside one or two others.
template <typename Weights, int kWeightRows, int kInputRows>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void dot_block_avx512(
    const typename Weights::Element* w, std::int64_t stride, const float* x, std::int64_t ldx,
    std::int64_t k, float* sums) {
  constexpr int kStreamBytesPerRound = 32 * sizeof(typename Weights::Element);
  __m512 acc[kWeightRows][kInputRows][2];
  for (auto& weight_row : acc) {
    for (auto& pair : weight_row) pair[0] = pair[1] = _mm512_setzero_ps();
  }
  std::int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    __m512 weights[kWeightRows][2];
    for (int s = 0; s < kWeightRows; ++s) {
      const auto* row = w + s * stride + i;
      const char* ahead = reinterpret_cast<const char*>(row) + kWeightPrefetchBytes;
      for (int line = 0; line < kStreamBytesPerRound; line += 64) prefetch_weights(ahead + line);
      weights[s][0] = Weights::load(row);
      weights[s][1] = Weights::load(row + 16);
    }
    for (int r = 0; r < kInputRows; ++r) {
      const __m512 first_inputs = _mm512_loadu_ps(x + r * ldx + i);
      const __m512 second_inputs = _mm512_loadu_ps(x + r * ldx + i + 16);
      for (int s = 0; s < kWeightRows; ++s) {
        acc[s][r][0] = _mm512_fmadd_ps(weights[s][0], first_inputs, acc[s][r][0]);
        acc[s][r][1] = _mm512_fmadd_ps(weights[s][1], second_inputs, acc[s][r][1]);
      }
    }
  }
  for (; i < k; i += 16) {
    const __mmask16 lanes = first_lanes(k - i);
    __m512 weights[kWeightRows];
    for (int s = 0; s < kWeightRows; ++s) {
      weights[s] = Weights::load(w + s * stride + i, lanes);  // masked-off lanes are 0
    }
    for (int r = 0; r < kInputRows; ++r) {
      const __m512 inputs = _mm512_maskz_loadu_ps(lanes, x + r * ldx + i);
      for (int s = 0; s < kWeightRows; ++s) {
        acc[s][r][0] = _mm512_fmadd_ps(weights[s], inputs, acc[s][r][0]);
      }
    }
  }
  for (int s = 0; s < kWeightRows; ++s) {
    for (int r = 0; r < kInputRows; ++r) {
      sums[s * kInputRows + r] = sum16(_mm512_add_ps(acc[s][r][0], acc[s][r][1]));
    }
  }
}

// One weight row against 1 to 4 input rows (ops/cpu/output_blocks.h's matrix_vector_dot_rows).
template <typename Weights>
void dot_rows_avx512(const typename Weights::Element* w, const float* x, std::int64_t ldx, int rows,
                     std::int64_t k, float* sums) {
  with_fixed_rows(rows, [&](auto fixed) {
    dot_block_avx512<Weights, 1, decltype(fixed)::value>(w, 0, x, ldx, k, sums);
  });
}

// A tile's sums: acc[r][i] holds dot (i, r) spread over 16 lanes; sums[8 i + r] gets it.
template <int kInputRows>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) inline void store_tile_sums(
    const __m512 (&acc)[kInputRows][2], float sums[16]) {
  __m512 by_lane[16];  // zeros for rows past kInputRows
  for (__m512& v : by_lane) v = _mm512_setzero_ps();
  for (int r = 0; r < kInputRows; ++r) {
    by_lane[r] = acc[r][0];
    by_lane[8 + r] = acc[r][1];
  }
  _mm512_storeu_ps(sums, sum_lanes16(by_lane));
}

// sums[8 i + r] = dot(row i of w0 / w1, row r of x) for i < 2, r < kInputRows; x rows are `in`
// apart.
template <typename Weights, int kInputRows>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void dot_tile(
    const typename Weights::Element* w0, const typename Weights::Element* w1, const float* x,
    std::int64_t in, float sums[16]) {
  constexpr int kStreamBytesPerRound = 2 * 16 * sizeof(typename Weights::Element);
  __m512 acc[kInputRows][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  // Whole rounds with plain loads, then the tail with masked ones: GCC treats a masked load as an
  // opaque memory read, and with one in the loop it keeps the accumulators in memory.
  std::int64_t k = 0;
  for (; k + 16 <= in; k += 16) {
    const char* ahead = reinterpret_cast<const char*>(w0 + 2 * k) + kWeightPrefetchBytes;
    for (int line = 0; line < kStreamBytesPerRound; line += 64) {
      prefetch_weights(ahead + line);
    }
    const __m512 first = Weights::load(w0 + k);
    const __m512 second = Weights::load(w1 + k);
    for (int r = 0; r < kInputRows; ++r) {
      const __m512 input = _mm512_loadu_ps(x + r * in + k);
      acc[r][0] = _mm512_fmadd_ps(first, input, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(second, input, acc[r][1]);
    }
  }
  if (k < in) {
    const __mmask16 lanes = first_lanes(in - k);
    const __m512 first = Weights::load(w0 + k, lanes);
    const __m512 second = Weights::load(w1 + k, lanes);
    for (int r = 0; r < kInputRows; ++r) {
      const __m512 input = _mm512_maskz_loadu_ps(lanes, x + r * in + k);
      acc[r][0] = _mm512_fmadd_ps(first, input, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(second, input, acc[r][1]);
    }
  }
  store_tile_sums<kInputRows>(acc, sums);
}

// From this many input rows on, the tiles; below, the kernels of one weight row at a time read
// the weights faster (synthetic:gpt2 at batch 1 and 2, f32 and bf16: 10-25% more tokens/s; at
// batch 4 the tiles gave 1.27x, at batch 8 1.5x in f32 and 1.7x in bf16). Why is not settled:
// giving each dot product 2-4 accumulators (so that the FMA latency cannot bind) did not close
// the gap; two interleaved weight streams may suit the hardware prefetchers less than one.
constexpr std::int64_t kTileMinRows = 4;

// How a tile's two weight rows are chosen: adjacent (o, o + 1: one stream, the avx512 tiles), or
// half the thread's block apart (o, o + ceil(width / 2): two streams far apart, the avx2 tiles;
// output_blocks.h's matrix_vector_streams says why).
enum class WeightPairs { kAdjacent, kApart };

// The loop both levels' tiles share: outputs [first, first + width) of y [rows, outputs] =
// x [rows, in] W^T (+ b), added to y with `accumulate`, a pair of weight rows at a time (an odd
// last row paired with itself, its twin discarded), the input rows in tiles of at most
// `max_tile_rows` (for_each_even_tile, output_blocks.h).
// tile(count, w0, w1, x_rows, sums) leaves the dot of w0 with x row r in sums[r] and of w1 in
// sums[second + r], for r < count. x is f32, or already rounded to bf16 (Input).
template <typename Element, typename Input, typename Tile>
void for_each_weight_pair_tile(const Input* x, const Element* w, const float* b, float* y,
                               std::int64_t rows, std::int64_t in, std::int64_t outputs,
                               std::int64_t first, std::int64_t width, bool accumulate,
                               WeightPairs pairs, std::int64_t max_tile_rows, int second,
                               Tile tile) {
  const bool apart = pairs == WeightPairs::kApart;
  const std::int64_t distance = apart ? (width + 1) / 2 : 1;  // from w0's row to w1's
  const std::int64_t end = apart ? first + distance : first + width;
  alignas(64) float sums[16];
  for (std::int64_t o = first; o < end; o += apart ? 1 : 2) {
    const std::int64_t twin = o + distance;
    const bool pair = twin < first + width;
    const Element* w0 = w + o * in;
    const Element* w1 = pair ? w + twin * in : w0;
    for_each_even_tile(rows, max_tile_rows, [&](std::int64_t r0, std::int64_t tile_rows) {
      const auto count = static_cast<int>(tile_rows);
      tile(count, w0, w1, x + r0 * in, sums);
      for (int r = 0; r < count; ++r) {
        float* row = y + (r0 + r) * outputs;
        store_output(row[o], sums[r], b, o, accumulate);
        if (pair) store_output(row[twin], sums[second + r], b, twin, accumulate);
      }
    });
  }
}

// kTileMinRows <= rows < gemm_min_rows at the avx512 levels: tiles of 4 to 8 rows (one tile up
// to 8 rows, two up to 16, ...; rows / tiles >= 4 whenever rows >= 4).
template <typename Weights>
void matrix_vector_tiles(const float* x, const typename Weights::Element* w, const float* b,
                         float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                         std::int64_t first, std::int64_t width, bool accumulate) {
  using Element = typename Weights::Element;
  using Tile = void (*)(const Element*, const Element*, const float*, std::int64_t, float*);
  constexpr Tile kTiles[5] = {dot_tile<Weights, 4>, dot_tile<Weights, 5>, dot_tile<Weights, 6>,
                              dot_tile<Weights, 7>, dot_tile<Weights, 8>};
  for_each_weight_pair_tile(
      x, w, b, y, rows, in, outputs, first, width, accumulate, WeightPairs::kAdjacent, 8, 8,
      [&](int count, const Element* w0, const Element* w1, const float* x_rows, float* sums) {
        kTiles[count - kTileMinRows](w0, w1, x_rows, in, sums);
      });
}

// sum + a[2i] b[2i] + a[2i+1] b[2i+1] in each f32 lane i, a and b 32 bf16 values each (vdpbf16ps).
// A function of its own, not a lambda: GCC gives a lambda none of its enclosing function's target
// attribute, so a build whose -march lacks avx512bf16 could not inline the intrinsic.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline __m512 multiply_add_bf16_pairs(
    __m512 sum, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(sum, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
}

// The tile of bf16 weights at the avx512bf16 level, on vdpbf16ps: x rounded to bf16 once per call
// (`x` here: bf16 rows `in` apart), 32 values a round, each lane's pair of products added by one
// instruction: per round 2 weight loads and kInputRows input loads for 2 kInputRows
// instructions, where dot_tile's 16-value rounds widen both weight vectors first.
template <int kInputRows>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c,avx512bf16"))) void
dot_tile_bf16_pairs(const std::uint16_t* w0, const std::uint16_t* w1, const std::uint16_t* x,
                    std::int64_t in, float sums[16]) {
  constexpr int kStreamBytesPerRound = 2 * 32 * sizeof(std::uint16_t);
  __m512 acc[kInputRows][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  std::int64_t k = 0;
  for (; k + 32 <= in; k += 32) {
    const char* ahead = reinterpret_cast<const char*>(w0 + 2 * k) + kWeightPrefetchBytes;
    for (int line = 0; line < kStreamBytesPerRound; line += 64) {
      prefetch_weights(ahead + line);
    }
    const __m512i first = _mm512_loadu_si512(w0 + k);
    const __m512i second = _mm512_loadu_si512(w1 + k);
    for (int r = 0; r < kInputRows; ++r) {
      const __m512i input = _mm512_loadu_si512(x + r * in + k);
      acc[r][0] = multiply_add_bf16_pairs(acc[r][0], first, input);
      acc[r][1] = multiply_add_bf16_pairs(acc[r][1], second, input);
    }
  }
  if (k < in) {
    const auto lanes = static_cast<__mmask32>((std::uint64_t{1} << (in - k)) - 1u);
    const __m512i first = _mm512_maskz_loadu_epi16(lanes, w0 + k);
    const __m512i second = _mm512_maskz_loadu_epi16(lanes, w1 + k);
    for (int r = 0; r < kInputRows; ++r) {
      const __m512i input = _mm512_maskz_loadu_epi16(lanes, x + r * in + k);
      acc[r][0] = multiply_add_bf16_pairs(acc[r][0], first, input);
      acc[r][1] = multiply_add_bf16_pairs(acc[r][1], second, input);
    }
  }
  store_tile_sums<kInputRows>(acc, sums);
}

// matrix_vector_tiles for bf16 weights on dot_tile_bf16_pairs, x already rounded to bf16
// (x_bf16, rows x in).
inline void matrix_vector_tiles_bf16_pairs(const std::uint16_t* x_bf16, const std::uint16_t* w,
                                           const float* b, float* y, std::int64_t rows,
                                           std::int64_t in, std::int64_t outputs,
                                           std::int64_t first, std::int64_t width,
                                           bool accumulate) {
  using Tile = void (*)(const std::uint16_t*, const std::uint16_t*, const std::uint16_t*,
                        std::int64_t, float*);
  constexpr Tile kTiles[5] = {dot_tile_bf16_pairs<4>, dot_tile_bf16_pairs<5>,
                              dot_tile_bf16_pairs<6>, dot_tile_bf16_pairs<7>,
                              dot_tile_bf16_pairs<8>};
  for_each_weight_pair_tile(
      x_bf16, w, b, y, rows, in, outputs, first, width, accumulate, WeightPairs::kAdjacent, 8, 8,
      [&](int count, const std::uint16_t* w0, const std::uint16_t* w1, const std::uint16_t* x_rows,
          float* sums) { kTiles[count - kTileMinRows](w0, w1, x_rows, in, sums); });
}

// A decode step from the avx512 level on, f32 or 16-bit weights (bf16 at avx512bf16 from
// kBf16PairMinRows rows takes the pair tiles instead): one row in kWeightStreams streams
// (dot_block_avx512), 2 and 3 one weight row at a time (dot_rows_avx512), from kTileMinRows on
// in tiles.
template <typename Weights>
void matrix_vector_avx512(const float* x, const typename Weights::Element* w, const float* b,
                          float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                          std::int64_t first, std::int64_t width, bool accumulate) {
  if (rows >= kTileMinRows) {
    matrix_vector_tiles<Weights>(x, w, b, y, rows, in, outputs, first, width, accumulate);
  } else if (rows > 1) {
    matrix_vector_dot_rows<dot_rows_avx512<Weights>>(x, w, b, y, rows, in, outputs, first, width,
                                                     accumulate);
  } else {
    matrix_vector_streams(first, width, b, y, accumulate,
                          [&](std::int64_t o, std::int64_t stride, auto streams, float* sums) {
                            dot_block_avx512<Weights, decltype(streams)::value, 1>(
                                w + o * in, stride * in, x, 0, in, sums);
                          });
  }
}

// ---- avx2: the tiles for CPUs without AVX-512 ----
//
// 2 weight rows against up to kAvx2TileRows input rows: 2 kAvx2TileRows accumulators of
// 8 lanes, 2 weight vectors and one input vector, 15 of the 16 ymm registers. Each weight vector
// is loaded (and widened) once and multiplied into every input row, so a round of 8 weights costs
// 2 + rows loads for 2 rows multiply-adds, where a dot product per (weight row, input row) pair
// costs two loads per multiply-add and runs at the load ports' rate, not the FMA units'. The
// weight rows stay in L1 while further tiles take the next input rows, so W is read from memory
// once per step whatever the batch. Each sum is reduced across its lanes at the end (sum8),
// the last k % 8 products in a scalar loop.
// Measured (AMD EPYC Zen 3, 2 threads, synthetic:gpt2 f32 decode behind 32 tokens; see
// docs/results/2026-12-02-engine/): gemm_min_rows (output_blocks.h) says where the GEMM takes
// over. Past 6 rows every further tile walks the weight pair again and each input vector loaded
// feeds 2 multiply-adds; from 12 (f32) or 16 (16-bit) rows the kernels with the input rows in the
// lanes run faster (decode_lanes_avx2.h: 1.4-1.5x at 16 to 63 f32 rows).
// The two weight rows are half the thread's block apart (WeightPairs::kApart), two streams far
// apart, each prefetched; adjacent rows, one stream jumping back and forth inside each 4 KB page,
// read slower on a Zen 3: pairs apart made decode 1.19x (f32), 1.07x (f16), 1.21x (bf16) at batch
// 2 and 1.35x, 1.11x, 1.03x at batch 4, 1.01-1.04x at batch 8, where arithmetic bounds the step
// (GPT-2, 2 threads, tg64, 5 interleaved rounds, docs/results/2026-12-07-avx2-tile-pairs-apart/).
constexpr int kAvx2TileRows = 6;

template <typename Weights, int kInputRows>
__attribute__((target("avx2,fma,f16c"))) void dot_tile_avx2(const typename Weights::Element* w0,
                                                            const typename Weights::Element* w1,
                                                            const float* x, std::int64_t in,
                                                            float sums[2 * kAvx2TileRows]) {
  __m256 acc[kInputRows][2];
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
  std::int64_t k = 0;
  for (; k + 8 <= in; k += 8) {
    prefetch_weights(reinterpret_cast<const char*>(w0 + k) + kWeightPrefetchBytes);
    prefetch_weights(reinterpret_cast<const char*>(w1 + k) + kWeightPrefetchBytes);
    const __m256 first = Weights::load8(w0 + k);
    const __m256 second = Weights::load8(w1 + k);
    for (int r = 0; r < kInputRows; ++r) {
      const __m256 input = _mm256_loadu_ps(x + r * in + k);
      acc[r][0] = _mm256_fmadd_ps(first, input, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(second, input, acc[r][1]);
    }
  }
  for (int r = 0; r < kInputRows; ++r) {
    sums[r] = sum8(acc[r][0]);
    sums[kAvx2TileRows + r] = sum8(acc[r][1]);
  }
  for (; k < in; ++k) {
    const float first = Weights::one(w0[k]), second = Weights::one(w1[k]);
    for (int r = 0; r < kInputRows; ++r) {
      sums[r] += first * x[r * in + k];
      sums[kAvx2TileRows + r] += second * x[r * in + k];
    }
  }
}

// 2 <= rows < gemm_min_rows(avx2): tiles of up to kAvx2TileRows input rows, the rows shared out
// evenly among them.
template <typename Weights>
void matrix_vector_tiles_avx2(const float* x, const typename Weights::Element* w, const float* b,
                              float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                              std::int64_t first, std::int64_t width, bool accumulate) {
  using Element = typename Weights::Element;
  using Tile = void (*)(const Element*, const Element*, const float*, std::int64_t, float*);
  constexpr Tile kTiles[kAvx2TileRows] = {dot_tile_avx2<Weights, 1>, dot_tile_avx2<Weights, 2>,
                                          dot_tile_avx2<Weights, 3>, dot_tile_avx2<Weights, 4>,
                                          dot_tile_avx2<Weights, 5>, dot_tile_avx2<Weights, 6>};
  for_each_weight_pair_tile(
      x, w, b, y, rows, in, outputs, first, width, accumulate, WeightPairs::kApart, kAvx2TileRows,
      kAvx2TileRows,
      [&](int count, const Element* w0, const Element* w1, const float* x_rows, float* sums) {
        kTiles[count - 1](w0, w1, x_rows, in, sums);
      });
}

// ---- avx2: one input row (output_blocks.h's matrix_vector_streams) ----

// sums[s] = dot(x, weight row s * stride of w) for s < kStreams: 8 accumulators in all
// (8 / kStreams a row, enough independent FMA chains to hide their latency), each vector of x
// loaded once for every row; the last k % 8 weights of each row in the scalar loop.
template <typename Weights, int kStreams>
__attribute__((target("avx2,fma,f16c"))) void dot_streams_avx2(const typename Weights::Element* w,
                                                               std::int64_t stride, const float* x,
                                                               std::int64_t k, float* sums) {
  constexpr int kAccumulators = 8 / kStreams;
  __m256 acc[kStreams][kAccumulators];
  for (int s = 0; s < kStreams; ++s) {
    for (int a = 0; a < kAccumulators; ++a) acc[s][a] = _mm256_setzero_ps();
  }
  std::int64_t i = 0;
  for (; i + 8 * kAccumulators <= k; i += 8 * kAccumulators) {
    for (int a = 0; a < kAccumulators; ++a) {
      const __m256 input = _mm256_loadu_ps(x + i + 8 * a);
      for (int s = 0; s < kStreams; ++s) {
        acc[s][a] = _mm256_fmadd_ps(Weights::load8(w + s * stride + i + 8 * a), input, acc[s][a]);
      }
    }
  }
  for (; i + 8 <= k; i += 8) {
    const __m256 input = _mm256_loadu_ps(x + i);
    for (int s = 0; s < kStreams; ++s) {
      acc[s][0] = _mm256_fmadd_ps(Weights::load8(w + s * stride + i), input, acc[s][0]);
    }
  }
  for (int s = 0; s < kStreams; ++s) {
    __m256 total = acc[s][0];
    for (int a = 1; a < kAccumulators; ++a) total = _mm256_add_ps(total, acc[s][a]);
    sums[s] = sum8(total);
    for (std::int64_t j = i; j < k; ++j) sums[s] += Weights::one(w[s * stride + j]) * x[j];
  }
}

// rows == 1 at the avx2 level: outputs [first, first + width) in kWeightStreams streams.
template <typename Weights>
void matrix_vector_streams_avx2(const float* x, const typename Weights::Element* w, const float* b,
                                float* y, std::int64_t in, std::int64_t first, std::int64_t width,
                                bool accumulate) {
  matrix_vector_streams(first, width, b, y, accumulate,
                        [&](std::int64_t o, std::int64_t stride, auto streams, float* sums) {
                          dot_streams_avx2<Weights, decltype(streams)::value>(
                              w + o * in, stride * in, x, in, sums);
                        });
}

// A decode step at the avx2 level below the lanes' row count (decode_lanes_avx2.h), f32 or 16-bit
// weights: one row in streams (above), more in the avx2 tiles.
template <typename Weights>
void matrix_vector_avx2(const float* x, const typename Weights::Element* w, const float* b,
                        float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                        std::int64_t first, std::int64_t width, bool accumulate) {
  if (rows > 1) {
    matrix_vector_tiles_avx2<Weights>(x, w, b, y, rows, in, outputs, first, width, accumulate);
  } else {
    matrix_vector_streams_avx2<Weights>(x, w, b, y, in, first, width, accumulate);
  }
}

}  // namespace attnscope::ops::cpu

#endif  // __x86_64__
