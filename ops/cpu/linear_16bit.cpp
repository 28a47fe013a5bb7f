// ops::linear on the cpu with 16-bit weights (bf16 or f16; arguments checked by ops/linear.cpp):
// out = x W^T + b with x, b and out in f32, W [M, K] stored in 16 bits and widened to f32 on the
// fly. Widening is exact (dtype.h), so the only rounding is f32 accumulation, as with f32 weights.
//
// Why 16-bit weights: batch-1 decode reads every weight once per token and is bound by memory
// bandwidth, so halving the bytes read nearly halves the time of a decode step.
//  - Decode (N < gemm_min_rows(level, dtype) rows, 16 to 128: ops/cpu/output_blocks.h): each
//    thread streams its block of weight rows once; every 16-bit row is widened in registers and
//    multiplied into up to 4 input rows at a time (so a row is loaded from memory once per step
//    and from L1 ceil(N / 4) times), and the weight stream is prefetched ahead
//    (kWeightPrefetchBytes, output_blocks.h: 1.5x). One row reads its block as 4 streams far apart
//    instead (ops/cpu/output_blocks.h's matrix_vector_streams): at the avx2 level without
//    software prefetch, 1.23-1.44x one stream on a Zen 3; from the avx512 level on prefetched,
//    1.03-1.07x on a Zen 4, within its noise. From the avx512 level on, 4 rows or more
//    go in the tiles shared with f32 weights (ops/cpu/dot_tile.h: 2 weight rows x up to 8 input
//    rows); at the avx2 level, from 16 rows, the input rows go in the vector lanes and each group
//    of weight rows is widened once (ops/cpu/decode_lanes_avx2.h). Cost: 2 M K bytes read, 2 N M K
//    FLOPs. bf16 widens by zero-extending each 16-bit word to 32 bits and shifting it left by 16
//    (bf16 is the top half of an f32); f16 by the F16C conversion (vcvtph2ps). At the avx512bf16
//    level, bf16 weights from kBf16PairMinRows (5) rows on: x rounded to bf16 once per call and the
//    pair tiles (dot_tile.h's dot_tile_bf16_pairs: no widening, vdpbf16ps), 1.36x at 5 rows, 1.62x
//    at 16 the f32 tiles; 1 to 4 rows are bound by reading the weights and stay f32.
//  - Prefill (from there on): FLOP-bound, so the blocked f32 GEMM (ops/cpu/gemm.h) runs, as
//    ops/cpu/linear.cpp does with f32 weights. From the avx2 level on it widens each thread's
//    block of weights in the packing every call does anyway (into its panels); at the portable
//    level each thread widens its whole block into an f32 buffer first and Eigen's GEMM packs that
//    (ops/cpu/widened_gemm.h: why whole blocks, and the memory it costs). Widening while packing
//    saves that buffer's 4 M K bytes written and read again: pp512 1.01-1.05x (Zen 4, 2 threads,
//    5 interleaved rounds, docs/results/2026-12-05-gemm-16bit-pack/). At the amx level both formats
//    go to AMX's bf16 tiles instead, x rounded to bf16 for bf16 weights (as at avx512bf16), split
//    in two bf16 parts for f16 weights, which are split in two as well (ops/cpu/gemm_amx.cpp). At
//    the avx512bf16 level (AVX-512 BF16 without AMX: Zen 4, Cooper Lake) bf16 weights stay bf16 and
//    x is rounded to bf16 as it is packed, for vdpbf16ps: 32 multiply-adds an instruction where an
//    FMA does 16 (ops/cpu/gemm.cpp's Bf16DotRecipe), the precision a bf16 model has on the GPU and
//    in PyTorch. pp512 1.75x (1.58-1.86, GPT-2) and 1.77x (1.61-1.83, SmolLM2 shape) the f32
//    arithmetic on widened weights, with f32 weights unchanged (0.99-1.00x; Zen 4, 2 threads, 5
//    interleaved rounds, docs/results/2026-12-05-bf16-dot-prefill/).
// Kernels at three levels (runtime/cpu_features.h explains why the level is chosen at run time;
// its avx512vnni, avx512bf16 (but bf16's pair tiles) and amx levels run the avx512 kernels here):
// avx512 (16 lanes, masked tails), avx2 (8 lanes, F16C, FMA) and portable (dtype.h's conversions in
// plain loops). The x86 functions carry their instruction sets as target attributes so that a build
// without -march=native, or for another architecture, still compiles the portable path.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/cpu/decode_lanes_avx2.h"
#include "ops/cpu/dot_tile.h"
#include "ops/cpu/element_rows.h"
#include "ops/cpu/gemm_amx.h"
#include "ops/cpu/output_blocks.h"
#include "ops/cpu/widened_gemm.h"
#include "ops/linear.h"
#include "runtime/cpu_features.h"
#include "runtime/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::ops::cpu {

namespace {

// A decode kernel computes sums[r] = sum_k widen(w[k]) x[r * ldx + k] for r < rows (1..4): one
// weight row against up to four input rows.
using DotRowsKernel = void (*)(const std::uint16_t* w, const float* x, std::int64_t ldx, int rows,
                               std::int64_t k, float* sums);

// ---- portable ----

template <bool kBf16>
float widen_one(std::uint16_t bits) {
  return kBf16 ? bf16_to_f32(bits) : f16_to_f32(bits);
}

template <bool kBf16>
void dot_rows_portable(const std::uint16_t* w, const float* x, std::int64_t ldx, int rows,
                       std::int64_t k, float* sums) {
  for (int r = 0; r < rows; ++r) sums[r] = 0.0f;
  for (std::int64_t i = 0; i < k; ++i) {
    const float weight = widen_one<kBf16>(w[i]);
    for (int r = 0; r < rows; ++r) sums[r] += weight * x[r * ldx + i];
  }
}

// Outputs [first, first + width) of a decode step (rows < gemm_min_rows), for one thread.
using MatrixVectorBlock = void (*)(const float* x, const std::uint16_t* w, const float* b, float* y,
                                   std::int64_t rows, std::int64_t in, std::int64_t outputs,
                                   std::int64_t first, std::int64_t width, bool accumulate);

#if defined(__x86_64__)
// bf16 weights at the avx512bf16 level: from kBf16PairMinRows rows (output_blocks.h) x is rounded
// to bf16, each thread its own copy (rows x in values: at 16 rows of 3072, ~1% of what the tiles
// then multiply), for the pair tiles (dot_tile.h); fewer rows stay f32.
void matrix_vector_bf16_pairs(const float* x, const std::uint16_t* w, const float* b, float* y,
                              std::int64_t rows, std::int64_t in, std::int64_t outputs,
                              std::int64_t first, std::int64_t width, bool accumulate) {
  if (rows < kBf16PairMinRows) {
    matrix_vector_avx512<Bf16Weights>(x, w, b, y, rows, in, outputs, first, width, accumulate);
    return;
  }
  thread_local std::vector<std::uint16_t> x_bf16;
  x_bf16.resize(static_cast<std::size_t>(rows * in));
  narrow_16bit(x, DType::BF16, rows * in, x_bf16.data());
  matrix_vector_tiles_bf16_pairs(x_bf16.data(), w, b, y, rows, in, outputs, first, width,
                                 accumulate);
}
#endif

template <bool kBf16>
MatrixVectorBlock matrix_vector_for(CpuLevel level) {
#if defined(__x86_64__)
  using Weights = std::conditional_t<kBf16, Bf16Weights, F16Weights>;
  if (kBf16 && level == CpuLevel::Avx512Bf16) return matrix_vector_bf16_pairs;
  if (level >= CpuLevel::Avx512) return matrix_vector_avx512<Weights>;
  if (level == CpuLevel::Avx2) return matrix_vector_avx2<Weights>;
#endif
  (void)level;
  return matrix_vector_dot_rows<dot_rows_portable<kBf16>>;
}

// The decode kernel for `weight_dtype` at `level` (cpu_level(), which a test may cap).
MatrixVectorBlock select_matrix_vector(DType weight_dtype, CpuLevel level) {
  return weight_dtype == DType::BF16 ? matrix_vector_for<true>(level)
                                     : matrix_vector_for<false>(level);
}

// Prefill below the amx level: from the avx2 level on, the packed GEMM widens each thread's block
// of weights as it packs them (bf16 weights at avx512bf16: multiplied as bf16 pairs,
// ops/cpu/gemm.h); below, the block is widened to f32 first (ops/cpu/widened_gemm.h).
void gemm_16bit(const Context& ctx, CpuLevel level, const float* x, const std::uint16_t* w,
                DType weight_dtype, const float* b, float* y, std::int64_t rows, std::int64_t in,
                std::int64_t outputs, bool accumulate) {
#if defined(__x86_64__)
  if (level >= CpuLevel::Avx2) {
    for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
      gemm_output_columns(level, x, w + first * in, weight_dtype, b, y, rows, in, outputs, first,
                          width, accumulate);
    });
    return;
  }
#endif
  gemm_widened_weights(ctx, x, b, y, rows, in, outputs, accumulate,
                       [&](std::int64_t first, std::int64_t count, float* dst) {
                         widen_16bit(w + first * in, weight_dtype, count * in, dst);
                       });
}

}  // namespace

void linear_16bit(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  Tensor& out, bool accumulate) {
  const std::int64_t rows = x.dim(0);
  const std::int64_t in = x.dim(1);
  const std::int64_t outputs = weight.dim(0);
  const CpuLevel level = cpu_level();
  const MatrixVectorBlock matrix_vector = select_matrix_vector(weight.dtype(), level);
  const auto* w = static_cast<const std::uint16_t*>(weight.raw_data());
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  if (decode_in_lanes_avx2(level, weight.dtype(), rows)) {
    decode_lanes_avx2(ctx, x.data<float>(), w, weight.dtype(), b, out.data<float>(), rows, in,
                      outputs, accumulate);
  } else if (rows < gemm_min_rows(level, weight.dtype())) {
    for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
      matrix_vector(x.data<float>(), w, b, out.data<float>(), rows, in, outputs, first, width,
                    accumulate);
    });
  } else if (level >= CpuLevel::Amx) {
    gemm_amx(ctx, x.data<float>(), w, weight.dtype(), b, out.data<float>(), rows, in, outputs,
             accumulate);
  } else {
    gemm_16bit(ctx, level, x.data<float>(), w, weight.dtype(), b, out.data<float>(), rows, in,
               outputs, accumulate);
  }
}

}  // namespace attnscope::ops::cpu
