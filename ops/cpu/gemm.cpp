// gemm_output_columns (ops/cpu/gemm.h): y (=|+=) x W^T + b for one thread's block of columns.
//
// The math: y[n][j] = b[j] + sum_k x[n][k] W[j][k] for N rows, M columns and K inputs: 2 N M K
// FLOPs on (N + M) K + N M floats, so at prefill sizes (N = 512) every float loaded from memory
// feeds hundreds of FLOPs and the FMA units, not memory, set the speed, as long as the operands
// sit in cache and registers when they are used. That is what the blocking below arranges.
//
// With AVX-512 (level avx512 and up, runtime/cpu_features.h): the BLIS scheme (Goto and van de
// Geijn, "Anatomy of high-performance matrix multiplication", 2008) with one micro-kernel:
//  - The micro-kernel keeps a 14 x 32 tile of y in 28 of the 32 zmm
//    registers. Per k it loads 32 weights (two vectors) and broadcasts 14 inputs: 28 FMAs for 16
//    loads, so the two FMA ports, not the load ports, are the bound. The last rows of a block
//    (N % 14) run a kernel of their own row count.
//  - Both operands are packed first so that the micro-kernel reads them contiguously: the weights
//    in panels of 32 columns (for each k, W[j..j+31][k] side by side), the inputs in panels of 14
//    rows (for each k, x[n..n+13][k] side by side); the edges are padded with zeros. Packing is a
//    transpose, done 16 x 16 floats at a time in registers (ops/cpu/transpose16.h).
//  - Loops: pack the thread's weights whole (at most kMaxPackedWeightBytes; wider blocks go in
//    column blocks); for each block of 112 rows (Gemm::kRowBlock), pack its inputs; for each weight
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
//  - Two recipes (F32Recipe, Bf16DotRecipe below) run that one blocking. F32Recipe: f32 lanes
//    and FMAs, for f32 weights and 16-bit ones widened as they are packed. Bf16DotRecipe, for
//    bf16 weights at the avx512bf16 level: a 32-bit lane holds a pair of bf16 values of two
//    consecutive k (a bf16 weight row already is such pairs; x is rounded to bf16 as it is
//    packed), and vdpbf16ps adds both products of each pair: per step of the kernel the same 16
//    loads and 28 instructions cover two k, twice the multiply-adds per instruction. The panels
//    count depth in lanes, so a slice of kDepth lanes is 512 values, in the same 32 KB.
// Cost: the weights are read and packed once per call (M K floats), the inputs once per column
// block (N K): (N + M) K floats moved against the 2 N M K FLOPs above (bf16 pairs: half the
// packed bytes, half the instructions).
// Measured on a standalone harness at GPT-2's pp512 shapes, one thread of a Zen 5 EPYC (FMA peak
// ~270 GFLOP/s): this kernel 190-235 GFLOP/s, Eigen's general kernel 175-195 (1.07-1.29x). In a
// GPT-2 pp512 on 2 threads the linear layers ran at ~70% of the FMA peak and the prefill 1.22x
// faster than with Eigen's GEMM (docs/results/2026-12-01-cpu-zen5).
// At the avx2 level (AVX2 and FMA, no AVX-512: Zen 2 and 3, Haswell to Alder Lake) the same
// blocking runs with 8-lane vectors: a 6 x 16 tile in 12 of the 16 ymm registers, panels of 16
// weight columns and of 6 input rows packed by 8 x 8 transposes (ops/cpu/transpose8.h), row
// blocks of 96, 16-bit weights widened as they are packed, f32 FMAs only. It replaced Eigen's
// GEMM there: pp512 medians 1.18-1.38x, GPT-2 and SmolLM2 shapes, every weight type (Zen 3, 3
// interleaved rounds, docs/results/2026-12-07-avx2-gemm/).
// Below avx2 (and on other architectures) Eigen's blocked GEMM does the same work.
#include "ops/cpu/gemm.h"

#include <algorithm>
#include <array>
#include <vector>

#include "ops/cpu/dot_tile.h"
#include "ops/cpu/eigen_maps.h"
#include "ops/cpu/output_blocks.h"
#include "ops/cpu/transpose16.h"
#include "ops/cpu/transpose8.h"

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

// The blocking both vector widths share (gemm_packed, below).
constexpr std::int64_t kDepth = 256;
constexpr std::int64_t kMaxPackedWeightBytes = std::int64_t{8} << 20;

// ---- AVX-512 (the avx512 level and up) ----
constexpr int kAvx512TileRows = 14;
constexpr int kAvx512TileCols = 32;

// How pack_panels reads a line's values into 16 lanes of 32 bits (Lanes::load: `values`
// consecutive values from src, at most 16 kValuesPerLane; lanes past them are zeros). A lane holds
// one f32 value, or two bf16 values side by side: the pair vdpbf16ps multiplies.
// f32 lanes, from f32 values or widened from 16-bit ones (Weights: one of ops/cpu/dot_tile.h's
// formats).
template <typename Weights>
struct F32Lanes {
  using Element = typename Weights::Element;
  static constexpr int kValuesPerLane = 1;
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 load(
      const Element* src, int values) {
    return Weights::load(src, static_cast<__mmask16>((1u << values) - 1u));
  }
};
// bf16 pairs from bf16 values: two consecutive stored values already are one 32-bit lane.
struct Bf16PairLanes {
  using Element = std::uint16_t;
  static constexpr int kValuesPerLane = 2;
  __attribute__((target("avx512f,avx512bw"))) static __m512 load(const std::uint16_t* src,
                                                                 int values) {
    const auto mask = static_cast<__mmask32>((std::uint64_t{1} << values) - 1u);
    return _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, src));
  }
};
// bf16 pairs from f32 values, each rounded to bf16 as the decode tiles' x is (Bf16Format::narrow,
// dot_tile.h: dtype.h's f32_to_bf16).
struct RoundedBf16PairLanes {
  using Element = float;
  static constexpr int kValuesPerLane = 2;
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 load(
      const float* src, int values) {
    const auto first = [](int count) { return static_cast<__mmask16>((1u << count) - 1u); };
    const __m256i low = Bf16Format::narrow(_mm512_maskz_loadu_ps(first(std::min(values, 16)), src));
    const __m256i high =
        Bf16Format::narrow(_mm512_maskz_loadu_ps(first(std::max(values - 16, 0)), src + 16));
    return _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1));
  }
};

// Lanes (32-bit) that `depth` values make.
template <typename Lanes>
std::int64_t lanes_of(std::int64_t depth) {
  return (depth + Lanes::kValuesPerLane - 1) / Lanes::kValuesPerLane;
}

// Packs `lines` rows of src (row stride ld), values [0, depth) of each, into panels of
// `panel_width` lines, in Lanes (above): panel p holds, for each lane k, lane k of line
// p * panel_width + i for i < panel_width side by side; lines past `lines` are zeros. Blocks of 16
// lines x 16 lanes are loaded as 16 vectors, transposed in registers and stored as one vector per
// lane: whole-vector loads and stores (the scalar copy was ~15% of a prefill's time: one store per
// float).
template <typename Lanes>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void pack_panels(
    const typename Lanes::Element* src, std::int64_t ld, std::int64_t lines, std::int64_t depth,
    int panel_width, float* dst) {
  constexpr int kValuesPerLoad = 16 * Lanes::kValuesPerLane;
  const std::int64_t depth_lanes = lanes_of<Lanes>(depth);
  for (std::int64_t first = 0; first < lines; first += panel_width) {
    for (int group = 0; group < panel_width; group += 16) {
      const int width = std::min(16, panel_width - group);
      const auto real_lines =
          static_cast<int>(std::clamp<std::int64_t>(lines - first - group, 0, width));
      const auto store_mask = static_cast<__mmask16>((1u << width) - 1u);
      for (std::int64_t k = 0; k < depth; k += kValuesPerLoad) {
        const auto values = static_cast<int>(std::min<std::int64_t>(kValuesPerLoad, depth - k));
        const int lanes = (values + Lanes::kValuesPerLane - 1) / Lanes::kValuesPerLane;
        __m512 block[16];
        for (int i = 0; i < 16; ++i) {
          block[i] = i < real_lines ? Lanes::load(src + (first + group + i) * ld + k, values)
                                    : _mm512_setzero_ps();
        }
        transpose16(block);
        const std::int64_t lane = k / Lanes::kValuesPerLane;
        for (int t = 0; t < lanes; ++t) {
          _mm512_mask_storeu_ps(dst + (lane + t) * panel_width + group, store_mask, block[t]);
        }
      }
    }
    dst += panel_width * depth_lanes;
  }
}

// What the packed GEMM multiplies: the lanes its weights and inputs are packed in, and how a
// broadcast input lane a multiplies into a vector of 16 weight lanes b (acc + a b).
//  - F32Recipe: f32 lanes, one FMA per lane: 16 multiply-adds an instruction.
//  - Bf16DotRecipe (bf16 weights from the avx512bf16 level on): bf16 pairs, vdpbf16ps adding
//    both products of each lane's pair: 32 multiply-adds an instruction. The inputs are rounded to
//    bf16 to get there (a relative error of at most 2^-8 each); the products of two bf16 values
//    are exact in f32 and the sums are f32, as with F32Recipe (subnormal inputs count as zero).
template <typename Weights>
struct F32Recipe {
  using WeightLanes = F32Lanes<Weights>;
  using InputLanes = F32Lanes<F32Weights>;
  __attribute__((target("avx512f"))) static __m512 multiply_add(__m512 a, __m512 b, __m512 acc) {
    return _mm512_fmadd_ps(a, b, acc);
  }
};
struct Bf16DotRecipe {
  using WeightLanes = Bf16PairLanes;
  using InputLanes = RoundedBf16PairLanes;
  __attribute__((target("avx512f,avx512bf16"))) static __m512 multiply_add(__m512 a, __m512 b,
                                                                           __m512 acc) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
  }
};
static_assert(F32Lanes<F32Weights>::kValuesPerLane == 1 &&
                  Bf16PairLanes::kValuesPerLane == RoundedBf16PairLanes::kValuesPerLane,
              "a recipe packs its weights and inputs alike");

// c[i][j] (=|+=) sum over lanes k of a[k][i] b[k][j] (+ bias[j]) for i < kRows, j < 32 (c's row
// stride ldc), multiplied by Recipe: a is one packed input panel (14 rows), b one packed weight
// panel, both `depth` lanes deep. The first slice of a tile's depth writes it (`overwrite`, unless
// y accumulates) and adds the bias (`bias`, 32 columns, when there is one); the later slices add to
// it. kRows is 14 but on the last rows of a block (N % 14): there the rows past N are not
// computed at all (at pp16, a 14-row kernel on the 2-row edge made the prefill 12% slower than
// Eigen's GEMM). Carries avx512bf16 so that Bf16DotRecipe's vdpbf16ps inlines; F32Recipe's
// instantiations hold no bf16 instruction (compilers emit them only for bf16 intrinsics and
// types) and run on any avx512 CPU.
template <typename Recipe, int kRows>
__attribute__((target("avx512f,avx512bf16"))) void tile_kernel(std::int64_t depth, const float* a,
                                                               const float* b, float* c,
                                                               std::int64_t ldc, const float* bias,
                                                               bool overwrite) {
  __m512 acc[kRows][2];
  for (auto& row : acc) row[0] = row[1] = _mm512_setzero_ps();
  for (std::int64_t k = 0; k < depth; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
    for (int i = 0; i < kRows; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = Recipe::multiply_add(ai, b0, acc[i][0]);
      acc[i][1] = Recipe::multiply_add(ai, b1, acc[i][1]);
    }
    a += kAvx512TileRows;
    b += kAvx512TileCols;
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

// What gemm_packed (below) needs of a vector width: its tile (kTileRows x kTileCols of y), row
// block, how the operands are packed and the tile kernels (tiles[r - 1] computes r rows).
template <typename Recipe>
struct Avx512Gemm {
  using WeightElement = typename Recipe::WeightLanes::Element;
  static constexpr int kTileRows = kAvx512TileRows;
  static constexpr int kTileCols = kAvx512TileCols;
  static constexpr std::int64_t kRowBlock = 8 * kTileRows;
  static std::int64_t depth_lanes(std::int64_t in) {
    return lanes_of<typename Recipe::InputLanes>(in);
  }
  static void pack_weights(const WeightElement* w, std::int64_t in, std::int64_t lines,
                           float* dst) {
    pack_panels<typename Recipe::WeightLanes>(w, in, lines, in, kTileCols, dst);
  }
  static void pack_inputs(const float* x, std::int64_t in, std::int64_t lines, float* dst) {
    pack_panels<typename Recipe::InputLanes>(x, in, lines, in, kTileRows, dst);
  }
  static constexpr std::array<TileKernel, kTileRows> tiles = kernels_by_rows<TileKernel, kTileRows>(
      [](auto rows) -> TileKernel { return tile_kernel<Recipe, decltype(rows)::value>; });
};

// ---- AVX2 (the avx2 level): 16 registers of 8 lanes, f32 FMAs only ----
// The tile is 6 x 16: 12 accumulators, two weight vectors and one broadcast input, 15 of the 16
// ymm registers (the shape of BLIS's Haswell kernel). Per k: 2 weight loads and 6 broadcasts for
// 12 FMAs, so the two FMA ports stay the bound. 16-bit weights are widened to f32 as they are
// packed, as F32Recipe does at the avx512 level.
constexpr int kAvx2TileRows = 6;
constexpr int kAvx2TileCols = 16;

// `values` (at most 8) consecutive weights from src as 8 f32 lanes, the lanes past them zeros.
// AVX2 has no masked 16-bit load, so a short tail goes through a zero-padded copy.
template <typename Weights>
__attribute__((target("avx2,fma,f16c"))) __m256 load_values(const typename Weights::Element* src,
                                                            int values) {
  if (values == 8) return Weights::load8(src);
  typename Weights::Element tail[8] = {};
  std::copy(src, src + values, tail);
  return Weights::load8(tail);
}

// pack_panels with 8 lanes: the same panels (lane k of line i of a panel at k * panel_width + i),
// in blocks of 8 lines x 8 values transposed in registers (ops/cpu/transpose8.h); a panel narrower
// than a multiple of 8 (the inputs' 6) stores the first lanes of each vector with a mask.
template <typename Weights>
__attribute__((target("avx2,fma,f16c"))) void pack_panels_avx2(const typename Weights::Element* src,
                                                               std::int64_t ld, std::int64_t lines,
                                                               std::int64_t depth, int panel_width,
                                                               float* dst) {
  for (std::int64_t first = 0; first < lines; first += panel_width) {
    for (int group = 0; group < panel_width; group += 8) {
      const int width = std::min(8, panel_width - group);
      const auto real_lines =
          static_cast<int>(std::clamp<std::int64_t>(lines - first - group, 0, width));
      const __m256i store_mask = first_lanes_avx2(width);
      for (std::int64_t k = 0; k < depth; k += 8) {
        const auto values = static_cast<int>(std::min<std::int64_t>(8, depth - k));
        __m256 block[8];
        for (int i = 0; i < 8; ++i) {
          block[i] = i < real_lines
                         ? load_values<Weights>(src + (first + group + i) * ld + k, values)
                         : _mm256_setzero_ps();
        }
        transpose8(block);
        for (int t = 0; t < values; ++t) {
          float* line = dst + (k + t) * panel_width + group;
          if (width == 8) {
            _mm256_storeu_ps(line, block[t]);
          } else {
            _mm256_maskstore_ps(line, store_mask, block[t]);
          }
        }
      }
    }
    dst += panel_width * depth;
  }
}

// tile_kernel (above) with 8 lanes and f32 FMAs: c (=|+=) a b (+ bias) for kRows <= 6 rows and 16
// columns, a one packed input panel (6 rows), b one packed weight panel.
template <int kRows>
__attribute__((target("avx2,fma"))) void tile_kernel_avx2(std::int64_t depth, const float* a,
                                                          const float* b, float* c,
                                                          std::int64_t ldc, const float* bias,
                                                          bool overwrite) {
  __m256 acc[kRows][2];
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < depth; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
    for (int i = 0; i < kRows; ++i) {
      // a[i] read as a float, then broadcast (one vbroadcastss all the same): with
      // _mm256_broadcast_ss(a + i) GCC 12 stored the 12 accumulators to the stack on every k
      // (perf annotate put most of the kernel's samples on the stores and the broadcasts after
      // them).
      const __m256 ai = _mm256_set1_ps(a[i]);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kAvx2TileRows;
    b += kAvx2TileCols;
  }
  const __m256 bias0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  const __m256 bias1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
  for (int i = 0; i < kRows; ++i) {
    float* row = c + i * ldc;
    __m256 low = _mm256_add_ps(acc[i][0], bias0);
    __m256 high = _mm256_add_ps(acc[i][1], bias1);
    if (!overwrite) {
      low = _mm256_add_ps(low, _mm256_loadu_ps(row));
      high = _mm256_add_ps(high, _mm256_loadu_ps(row + 8));
    }
    _mm256_storeu_ps(row, low);
    _mm256_storeu_ps(row + 8, high);
  }
}

template <typename Weights>
struct Avx2Gemm {
  using WeightElement = typename Weights::Element;
  static constexpr int kTileRows = kAvx2TileRows;
  static constexpr int kTileCols = kAvx2TileCols;
  static constexpr std::int64_t kRowBlock = 16 * kTileRows;
  static std::int64_t depth_lanes(std::int64_t in) { return in; }
  static void pack_weights(const WeightElement* w, std::int64_t in, std::int64_t lines,
                           float* dst) {
    pack_panels_avx2<Weights>(w, in, lines, in, kTileCols, dst);
  }
  static void pack_inputs(const float* x, std::int64_t in, std::int64_t lines, float* dst) {
    pack_panels_avx2<F32Weights>(x, in, lines, in, kTileRows, dst);
  }
  static constexpr std::array<TileKernel, kTileRows> tiles = kernels_by_rows<TileKernel, kTileRows>(
      [](auto rows) -> TileKernel { return tile_kernel_avx2<decltype(rows)::value>; });
};

// ---- The blocking, for either width (Gemm: Avx512Gemm or Avx2Gemm) ----

// A tile on the right edge (cols < kTileCols) runs on its zero-padded weight panel into a scratch
// tile, of which the valid columns go to c, as the tile kernel's would (bias and overwrite alike).
template <typename Gemm>
void edge_columns_tile(TileKernel kernel, std::int64_t depth, const float* a, const float* b,
                       float* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols,
                       const float* bias, bool overwrite) {
  alignas(64) float scratch[Gemm::kTileRows * Gemm::kTileCols];
  kernel(depth, a, b, scratch, Gemm::kTileCols, nullptr, true);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const float start = (overwrite ? 0.0f : c[i * ldc + j]) + (bias ? bias[j] : 0.0f);
      c[i * ldc + j] = start + scratch[i * Gemm::kTileCols + j];
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
// apart); bias (may be null) is that many columns' bias. Gemm (above) says how the weights and
// inputs are packed and multiplied; the packed panels count depth in its lanes.
template <typename Gemm>
void gemm_packed(const float* x, const typename Gemm::WeightElement* w_block, const float* bias,
                 float* y_block, std::int64_t rows, std::int64_t in, std::int64_t ldy,
                 std::int64_t width, bool accumulate) {
  constexpr std::int64_t kTileRows = Gemm::kTileRows;
  constexpr std::int64_t kTileCols = Gemm::kTileCols;
  constexpr std::int64_t kRowBlock = Gemm::kRowBlock;
  std::vector<float>& packed_inputs = packed_operands().inputs;
  std::vector<float>& packed_weights = packed_operands().weights;
  const std::int64_t depth_lanes = Gemm::depth_lanes(in);
  const std::int64_t column_block = std::max<std::int64_t>(
      kTileCols,
      kMaxPackedWeightBytes / (depth_lanes * std::int64_t{sizeof(float)}) / kTileCols * kTileCols);
  const auto inputs_size =
      static_cast<std::size_t>(round_up(std::min(kRowBlock, rows), kTileRows) * depth_lanes);
  const auto weights_size =
      static_cast<std::size_t>(round_up(std::min(column_block, width), kTileCols) * depth_lanes);
  if (packed_inputs.size() < inputs_size) packed_inputs.resize(inputs_size);
  if (packed_weights.size() < weights_size) packed_weights.resize(weights_size);

  for (std::int64_t col = 0; col < width; col += column_block) {
    const std::int64_t cols = std::min(column_block, width - col);
    Gemm::pack_weights(w_block + col * in, in, cols, packed_weights.data());
    for (std::int64_t row = 0; row < rows; row += kRowBlock) {
      const std::int64_t block_rows = std::min(kRowBlock, rows - row);
      Gemm::pack_inputs(x + row * in, in, block_rows, packed_inputs.data());
      for (std::int64_t j = 0; j < cols; j += kTileCols) {
        const std::int64_t tile_cols = std::min(kTileCols, cols - j);
        for (std::int64_t k = 0; k < depth_lanes; k += kDepth) {
          const std::int64_t depth = std::min(kDepth, depth_lanes - k);
          const bool first_slice = k == 0;
          const float* tile_bias = first_slice && bias ? bias + col + j : nullptr;
          const bool overwrite = first_slice && !accumulate;
          const float* b = packed_weights.data() + j * depth_lanes + k * kTileCols;
          for (std::int64_t i = 0; i < block_rows; i += kTileRows) {
            const float* a = packed_inputs.data() + i * depth_lanes + k * kTileRows;
            float* c = y_block + (row + i) * ldy + col + j;
            const std::int64_t tile_rows = std::min(kTileRows, block_rows - i);
            const TileKernel kernel = Gemm::tiles[static_cast<std::size_t>(tile_rows - 1)];
            if (tile_cols == kTileCols) {
              kernel(depth, a, b, c, ldy, tile_bias, overwrite);
            } else {
              edge_columns_tile<Gemm>(kernel, depth, a, b, c, ldy, tile_rows, tile_cols, tile_bias,
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
  const float* bias = b ? b + first : nullptr;
  if (level >= CpuLevel::Avx512) {
    gemm_packed<Avx512Gemm<F32Recipe<F32Weights>>>(x, w_block, bias, y_block, rows, in, outputs,
                                                   width, accumulate);
    return;
  }
  if (level == CpuLevel::Avx2) {
    gemm_packed<Avx2Gemm<F32Weights>>(x, w_block, bias, y_block, rows, in, outputs, width,
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
void gemm_output_columns(CpuLevel level, const float* x, const std::uint16_t* w_block,
                         DType weight_dtype, const float* b, float* y, std::int64_t rows,
                         std::int64_t in, std::int64_t outputs, std::int64_t first,
                         std::int64_t width, bool accumulate) {
  const float* bias = b ? b + first : nullptr;
  float* y_block = y + first;
  if (level == CpuLevel::Avx2 && weight_dtype == DType::BF16) {
    gemm_packed<Avx2Gemm<Bf16Weights>>(x, w_block, bias, y_block, rows, in, outputs, width,
                                       accumulate);
  } else if (level == CpuLevel::Avx2) {
    gemm_packed<Avx2Gemm<F16Weights>>(x, w_block, bias, y_block, rows, in, outputs, width,
                                      accumulate);
  } else if (weight_dtype == DType::BF16 && bf16_linear_rounds_x(level, rows)) {
    gemm_packed<Avx512Gemm<Bf16DotRecipe>>(x, w_block, bias, y_block, rows, in, outputs, width,
                                           accumulate);
  } else if (weight_dtype == DType::BF16) {
    gemm_packed<Avx512Gemm<F32Recipe<Bf16Weights>>>(x, w_block, bias, y_block, rows, in, outputs,
                                                    width, accumulate);
  } else {
    gemm_packed<Avx512Gemm<F32Recipe<F16Weights>>>(x, w_block, bias, y_block, rows, in, outputs,
                                                   width, accumulate);
  }
}
#endif

}  // namespace attnscope::ops::cpu
