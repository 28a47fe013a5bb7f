// gemm_output_columns (ops/cpu/gemm.h): y (=|+=) x W^T + b for one thread's block of columns.
//
// The math: y[n][j] = b[j] + sum_k x[n][k] W[j][k] for N rows, M columns and K inputs: 2 N M K
// FLOPs on (N + M) K + N M floats, so at prefill sizes (N = 512) every float loaded from memory
// feeds hundreds of FLOPs and the FMA units, not memory, set the speed, as long as the operands
// sit in cache and registers when they are used. That is what the blocking below arranges.
//
// With AVX-512 (level avx512 and up, runtime/cpu_features.h): the BLIS scheme (Goto and van de
// Geijn, "Anatomy of high-performance matrix multiplication", 2008) with one micro-kernel:
//  - The micro-kernel keeps a kTileRows x kTileCols = 14 x 32 tile of y in 28 of the 32 zmm
//    registers. Per k it loads 32 weights (two vectors) and broadcasts 14 inputs: 28 FMAs for 16
//    loads, so the two FMA ports, not the load ports, are the bound. The last rows of a block
//    (N % 14) run a kernel of their own row count.
//  - Both operands are packed first so that the micro-kernel reads them contiguously: the weights
//    in panels of 32 columns (for each k, W[j..j+31][k] side by side), the inputs in panels of 14
//    rows (for each k, x[n..n+13][k] side by side); the edges are padded with zeros. Packing is a
//    transpose, done 16 x 16 floats at a time in registers (ops/cpu/transpose16.h).
//  - Loops: pack the thread's weights whole (at most kMaxPackedWeightBytes; wider blocks go in
//    column blocks); for each block of kRowBlock = 112 rows, pack its inputs; for each weight
//    panel, for each slice of kDepth = 256 inputs, run the kernel on every tile of the block:
//    the panel's slice (32 KB: stays in L1) against each input panel's slice (14 KB each, 112 KB
//    for the block: stays in L2).
//    kDepth 128, 192 and 384 and row blocks of 224 measured the same as these within this Zen 5's
//    noise (48 KB L1). With a 32 KB L1 the 32 KB panel fills it, yet on a Zen 4 kDepth 128 was
//    slower: pp512 0.93-0.98x at f32, bf16 and f16 (GPT-2 and SmolLM2 shapes, 2 threads, 4
//    interleaved rounds, 2026-12-04).
//  - y is written by the first slice (with the bias) and added to by the later ones, and the
//    panel's 112 x 32 block of y (14 KB) stays in cache across its slices. Before, y was set to
//    the bias in a pass of its own and the slices went outermost, so every slice walked the
//    block's whole width of y (688 KB at GPT-2's 3072-wide MLP on 2 threads: out of L2 and
//    back). Measured (Zen 4, 2 threads, pp512, 5 interleaved rounds,
//    docs/results/2026-12-05-gemm-first-slice/): pp512 1.02-1.08x (medians) with f32 and 16-bit
//    weights, GPT-2 and SmolLM2 shapes.
// Cost: the weights are read and packed once per call (M K floats), the inputs once per column
// block (N K): (N + M) K floats moved against the 2 N M K FLOPs above.
// Measured on a standalone harness at GPT-2's pp512 shapes, one thread of a Zen 5 EPYC (FMA peak
// ~270 GFLOP/s): this kernel 190-235 GFLOP/s, Eigen's general kernel 175-195 (1.07-1.29x). In a
// GPT-2 pp512 on 2 threads the linear layers ran at ~70% of the FMA peak and the prefill 1.22x
// faster than with Eigen's GEMM (docs/results/2026-12-01-cpu-zen5).
// Below avx512 (and on other architectures) Eigen's blocked GEMM does the same work.
#include "ops/cpu/gemm.h"

#include <algorithm>
#include <array>
#include <vector>

#include "ops/cpu/dot_tile.h"
#include "ops/cpu/eigen_maps.h"
#include "ops/cpu/output_blocks.h"
#include "ops/cpu/transpose16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::ops::cpu {

namespace {

void gemm_eigen(const float* x, const float* w_block, float* y_block, std::int64_t rows,
                std::int64_t in, std::int64_t ldy, std::int64_t width) {
  const ConstMatrixMap input(x, rows, in);
  const ConstMatrixMap weight(w_block, width, in);
  Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>> result(y_block, rows, width,
                                                                       Eigen::OuterStride<>(ldy));
  result.noalias() += input * weight.transpose();
}

#if defined(__x86_64__)

constexpr int kTileRows = 14;
constexpr int kTileCols = 32;
constexpr std::int64_t kDepth = 256;
constexpr std::int64_t kRowBlock = 8 * kTileRows;
constexpr std::int64_t kMaxPackedWeightBytes = std::int64_t{8} << 20;

// Packs `lines` rows of src (row stride ld), inputs [0, depth) of each, into panels of
// `panel_width` lines, as f32 (16-bit weights are widened as they are loaded: Source is one of
// ops/cpu/dot_tile.h's formats): panel p holds, for each k, src[p * panel_width + i][k] for i <
// panel_width side by side; lines past `lines` are zeros. Blocks of 16 lines x 16 inputs are
// loaded as 16 vectors, transposed in registers and stored as one vector per input: whole-vector
// loads and stores (the scalar copy was ~15% of a prefill's time: one store per float).
template <typename Source>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void pack_panels(
    const typename Source::Element* src, std::int64_t ld, std::int64_t lines, std::int64_t depth,
    int panel_width, float* dst) {
  for (std::int64_t first = 0; first < lines; first += panel_width) {
    for (int group = 0; group < panel_width; group += 16) {
      const int width = std::min(16, panel_width - group);
      const auto real_lines =
          static_cast<int>(std::clamp<std::int64_t>(lines - first - group, 0, width));
      const auto store_mask = static_cast<__mmask16>((1u << width) - 1u);
      for (std::int64_t k = 0; k < depth; k += 16) {
        const auto count = static_cast<int>(std::min<std::int64_t>(16, depth - k));
        const auto load_mask = static_cast<__mmask16>((1u << count) - 1u);
        __m512 block[16];
        for (int i = 0; i < 16; ++i) {
          block[i] = i < real_lines ? Source::load(src + (first + group + i) * ld + k, load_mask)
                                    : _mm512_setzero_ps();
        }
        transpose16(block);
        for (int t = 0; t < count; ++t) {
          _mm512_mask_storeu_ps(dst + (k + t) * panel_width + group, store_mask, block[t]);
        }
      }
    }
    dst += panel_width * depth;
  }
}

// c[i][j] (=|+=) sum_k a[k][i] b[k][j] (+ bias[j]) for i < kRows, j < 32 (c's row stride ldc):
// a is one packed input panel, b one packed weight panel, both `depth` deep. The first slice of
// a tile's depth writes it (`overwrite`, unless y accumulates) and adds the bias (`bias`, 32
// columns, when there is one); the later slices add to it. kRows is kTileRows but on the last
// rows of a block (N % 14): there the rows past N are not computed at all (at pp16, a 14-row
// kernel on the 2-row edge made the prefill 12% slower than Eigen's GEMM).
template <int kRows>
__attribute__((target("avx512f"))) void tile_kernel(std::int64_t depth, const float* a,
                                                    const float* b, float* c, std::int64_t ldc,
                                                    const float* bias, bool overwrite) {
  __m512 acc[kRows][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  for (std::int64_t k = 0; k < depth; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
    for (int i = 0; i < kRows; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kTileRows;
    b += kTileCols;
  }
  const __m512 bias0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
  const __m512 bias1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < kRows; ++i) {
    float* row = c + i * ldc;
    __m512 low = _mm512_add_ps(acc[i][0], bias0);
    __m512 high = _mm512_add_ps(acc[i][1], bias1);
    if (!overwrite) {
      low = _mm512_add_ps(low, _mm512_loadu_ps(row));
      high = _mm512_add_ps(high, _mm512_loadu_ps(row + 16));
    }
    _mm512_storeu_ps(row, low);
    _mm512_storeu_ps(row + 16, high);
  }
}

using TileKernel = void (*)(std::int64_t, const float*, const float*, float*, std::int64_t,
                            const float*, bool);

// kTileKernels[r - 1] computes r rows.
constexpr std::array<TileKernel, kTileRows> kTileKernels = kernels_by_rows<TileKernel, kTileRows>(
    [](auto rows) -> TileKernel { return tile_kernel<decltype(rows)::value>; });

// A tile on the right edge (cols < 32) runs on its zero-padded weight panel into a scratch tile,
// of which the valid columns go to c, as tile_kernel's would (bias and overwrite alike).
void edge_columns_tile(TileKernel kernel, std::int64_t depth, const float* a, const float* b,
                       float* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols,
                       const float* bias, bool overwrite) {
  alignas(64) float scratch[kTileRows * kTileCols];
  kernel(depth, a, b, scratch, kTileCols, nullptr, true);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const float start = (overwrite ? 0.0f : c[i * ldc + j]) + (bias ? bias[j] : 0.0f);
      c[i * ldc + j] = start + scratch[i * kTileCols + j];
    }
  }
}

std::int64_t round_up(std::int64_t n, std::int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

// The packed operands of a thread's calls: grown, never shrunk, and kept between calls
// (allocating per call would fault pages in); one pair whatever the weights' format.
struct PackedOperands {
  std::vector<float> inputs, weights;
};
PackedOperands& packed_operands() {
  thread_local PackedOperands packed;
  return packed;
}

// y_block = (y_block if accumulate) + x w_block^T + bias: columns [0, width) of y's rows (ldy
// apart); bias (may be null) is that many columns' bias. Weights is the weights' format.
template <typename Weights>
void gemm_avx512(const float* x, const typename Weights::Element* w_block, const float* bias,
                 float* y_block, std::int64_t rows, std::int64_t in, std::int64_t ldy,
                 std::int64_t width, bool accumulate) {
  std::vector<float>& packed_inputs = packed_operands().inputs;
  std::vector<float>& packed_weights = packed_operands().weights;
  const std::int64_t column_block =
      std::max<std::int64_t>(kTileCols, kMaxPackedWeightBytes / (in * std::int64_t{sizeof(float)}) /
                                            kTileCols * kTileCols);
  const auto inputs_size =
      static_cast<std::size_t>(round_up(std::min(kRowBlock, rows), kTileRows) * in);
  const auto weights_size =
      static_cast<std::size_t>(round_up(std::min(column_block, width), kTileCols) * in);
  if (packed_inputs.size() < inputs_size) packed_inputs.resize(inputs_size);
  if (packed_weights.size() < weights_size) packed_weights.resize(weights_size);

  for (std::int64_t col = 0; col < width; col += column_block) {
    const std::int64_t cols = std::min(column_block, width - col);
    pack_panels<Weights>(w_block + col * in, in, cols, in, kTileCols, packed_weights.data());
    for (std::int64_t row = 0; row < rows; row += kRowBlock) {
      const std::int64_t block_rows = std::min(kRowBlock, rows - row);
      pack_panels<F32Weights>(x + row * in, in, block_rows, in, kTileRows, packed_inputs.data());
      for (std::int64_t j = 0; j < cols; j += kTileCols) {
        const std::int64_t tile_cols = std::min<std::int64_t>(kTileCols, cols - j);
        for (std::int64_t k = 0; k < in; k += kDepth) {
          const std::int64_t depth = std::min(kDepth, in - k);
          const bool first_slice = k == 0;
          const float* tile_bias = first_slice && bias ? bias + col + j : nullptr;
          const bool overwrite = first_slice && !accumulate;
          const float* b = packed_weights.data() + j * in + k * kTileCols;
          for (std::int64_t i = 0; i < block_rows; i += kTileRows) {
            const float* a = packed_inputs.data() + i * in + k * kTileRows;
            float* c = y_block + (row + i) * ldy + col + j;
            const std::int64_t tile_rows = std::min<std::int64_t>(kTileRows, block_rows - i);
            const TileKernel kernel = kTileKernels[static_cast<std::size_t>(tile_rows - 1)];
            if (tile_cols == kTileCols) {
              kernel(depth, a, b, c, ldy, tile_bias, overwrite);
            } else {
              edge_columns_tile(kernel, depth, a, b, c, ldy, tile_rows, tile_cols, tile_bias,
                                overwrite);
            }
          }
        }
      }
    }
  }
}

#endif  // __x86_64__

}  // namespace

void gemm_output_columns(CpuLevel level, const float* x, const float* w_block, const float* b,
                         float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                         std::int64_t first, std::int64_t width, bool accumulate) {
  float* y_block = y + first;
#if defined(__x86_64__)
  if (level >= CpuLevel::Avx512) {
    gemm_avx512<F32Weights>(x, w_block, b ? b + first : nullptr, y_block, rows, in, outputs, width,
                            accumulate);
    return;
  }
#endif
  // Eigen adds the product into y, so y starts as the bias (or zero).
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = y_block + r * outputs;
    for (std::int64_t j = 0; j < width; ++j) {
      const float start = b ? b[first + j] : 0.0f;
      row[j] = accumulate ? row[j] + start : start;
    }
  }
  gemm_eigen(x, w_block, y_block, rows, in, outputs, width);
}

#if defined(__x86_64__)
void gemm_output_columns(const float* x, const std::uint16_t* w_block, DType weight_dtype,
                         const float* b, float* y, std::int64_t rows, std::int64_t in,
                         std::int64_t outputs, std::int64_t first, std::int64_t width,
                         bool accumulate) {
  const float* bias = b ? b + first : nullptr;
  if (weight_dtype == DType::BF16) {
    gemm_avx512<Bf16Weights>(x, w_block, bias, y + first, rows, in, outputs, width, accumulate);
  } else {
    gemm_avx512<F16Weights>(x, w_block, bias, y + first, rows, in, outputs, width, accumulate);
  }
}
#endif

}  // namespace attnscope::ops::cpu
