// How the cpu linear kernels (ops/cpu/linear.cpp for f32 weights, linear_16bit.cpp for 16-bit
// ones, linear_q8_0.cpp for q8_0 blocks) share out their work: the decode/prefill threshold, the
// split of the output features into one contiguous block per thread, how far ahead the
// hand-written decode kernels prefetch their weight stream, how a decode kernel writes one
// output, and the loop of the kernels that take one weight row at a time.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "runtime/context.h"
#include "runtime/cpu_features.h"
#include "runtime/dtype.h"

namespace attnscope::ops::cpu {

// Below gemm_min_rows(level, weights) rows (the decode step of a batch) the decode kernels run:
// each weight row is read from memory once and used for every input row while in L1, memory-bound
// for a few rows, then bound by the kernel's multiply rate (no faster with more rows). From it on
// (prefill), a blocked GEMM: FLOP-bound, faster per row, but it repacks every weight on every call
// (and widens 16-bit and q8_0 weights to f32, or at the amx level splits them into bf16 tiles),
// which only enough rows pay for. Where the two cross depends on the level and the weights.
// Measured (2-core Xeon, synthetic:gpt2, decode tokens/s of a batch of that many rows, decode
// kernels against the GEMM, docs/results/2026-12-04-decode-rows/):
//  - avx512 levels: f32 at 32 rows 583 against 559, at 48 617 against 633; bf16 and f16 at 64
//    759-772 against 601-618 (at 16: 2.9x), q8_0 at 64 733-773 against 601-612, at 128 764
//    against 730 (avx512; at avx512vnni that was the widened f32 GEMM, since replaced).
//  - avx512vnni, q8_0 on the byte GEMM (ops/cpu/gemm_q8_0_vnni.cpp; Zen 4, 3 interleaved rounds,
//    docs/results/2026-12-04-vnni-q8-prefill/): GEMM / decode kernels 0.64x at 16 rows, 0.85x at
//    24, 1.00x (0.97-1.03) at 32, 1.26x at 48, 1.53x at 64; below 32 the per-call packing of
//    every weight costs more than the blocked kernel saves. With the packing vectorized since
//    (docs/results/2026-12-04-vnni-q8-prefill/pack/): 0.71x at 16, 1.01x at 24, 1.18x at 32.
//    Since, decode steps from 6 rows on have the input rows in the lanes
//    (ops/cpu/decode_q8_0_vnni.cpp), which leads the GEMM up to 96 rows (GEMM / lanes: 0.85x at
//    48, 0.89x at 64, 0.97x at 96, 1.00x at 128; docs/results/2026-12-04-q8-decode-lanes/).
//  - avx512bf16, bf16 with x rounded to bf16 in both (from kBf16PairMinRows rows: the decode
//    tiles of ops/cpu/dot_tile.h's dot_tile_bf16_pairs, the GEMM's Bf16DotRecipe; Zen 4, 3
//    interleaved rounds, docs/results/2026-12-05-bf16-dot-prefill/decode-rows/): GEMM / decode
//    tiles 0.81x (0.79-0.84) at 24 rows, 0.93x at 32, 1.02x at 48 and 64, 1.14x at 96.
//  - amx: bf16 at 16 688 against 638, at 24 578 against 851; f16 at 24 662 against 533, at 32
//    700 against 714; q8_0 at 48 760-774 against 702-717, at 64 748-781 against 896-922. Since
//    the AMX GEMM reads its tiles in order (3 interleaved rounds, GEMM / decode kernels,
//    docs/results/2026-12-06-amx-column-order/decode-rows/): f16 0.71x (0.69-0.74) at 16 rows,
//    1.10x (1.05-1.11) at 24; q8_0 0.72x at 24, 1.04x (0.95-1.16) at 32, 1.35x (1.15-1.37) at 48.
//  - avx2: Eigen's GEMM packs the weights on every call, and the avx2 tiles (dot_tile.h) stay
//    ahead of it for f32 and 16-bit weights up to 64 rows (AMD EPYC Zen 3,
//    docs/results/2026-12-02-engine/); q8_0 at 16 405 against 322, at 48 481 against 635. The
//    packed avx2 GEMM (ops/cpu/gemm.cpp) that has since replaced Eigen's there (1.2-1.4x at
//    pp512) is behind the tiles at 16 rows (f32 0.83x, bf16 0.74x, q8_0 0.48x) and level with
//    them from 24 to 48 for f32 and bf16, within a noise of +-25% (3 interleaved rounds,
//    docs/results/2026-12-07-avx2-gemm/decode-rows/). Since, batches from 12 rows (f32) or 16
//    (the others) put the input rows in the vector lanes (decode_lanes_avx2.h), which never pack
//    W and lead the GEMM up to 128 rows for every weight type (lanes / GEMM, Zen 3,
//    docs/results/2026-12-07-avx2-decode-lanes/): f32 1.12x at 64, 1.07x at 96, 1.06x at 128
//    (2 rounds); bf16 1.09x, 1.05x, 1.11x (2 rounds); q8_0 1.50x at 32, 1.26x at 48, 1.22x at 64,
//    1.17x at 96 (3 rounds); f16 1.12x at 64, 1.02x at 96, 1.04x at 127 (2 rounds).
//  - portable: not measured; 16, as every level had before.
inline std::int64_t gemm_min_rows(CpuLevel level, DType weights) {
  switch (level) {
    case CpuLevel::Portable:
      return 16;
    case CpuLevel::Avx2:
      return 128;
    case CpuLevel::Avx512:
    case CpuLevel::Avx512Vnni:
      return weights == DType::F32 ? 48 : 128;
    case CpuLevel::Avx512Bf16:
      return weights == DType::F32 || weights == DType::BF16 ? 48 : 128;
    case CpuLevel::Amx:
      return weights == DType::F32    ? 48
             : weights == DType::BF16 ? 16
             : weights == DType::F16  ? 24
                                      : 48;
  }
  return 16;
}

// From this many rows on, a linear layer with bf16 weights at the avx512bf16 level rounds x to
// bf16 and multiplies pairs with vdpbf16ps, in the decode tiles below gemm_min_rows and in the
// GEMM from it on. At 4 rows the decode tiles are bound by reading the weights, and the pairs
// were no faster (1.00x, 0.92-1.03); at 5 1.36x, at 8 1.44x, at 16 1.62x the f32 tiles on widened
// weights (Zen 4, 3 interleaved rounds, docs/results/2026-12-05-bf16-dot-prefill/decode-rows/).
constexpr std::int64_t kBf16PairMinRows = 5;

// Whether a linear layer with bf16 weights at `level` multiplies its `rows` input rows rounded to
// bf16 rather than in f32: at avx512bf16 from kBf16PairMinRows rows (above), at amx in the GEMM
// on AMX's tiles (ops/cpu/gemm_amx.cpp). The decode kernels at amx keep x in f32: there the pair
// tiles ran at 0.89x (0.88-0.89) the f32 tiles at 8 and 12 rows, and 0.75x the tiles' GEMM at
// 16 (Xeon, synthetic:gpt2, 3 interleaved rounds, docs/results/2026-12-06-amx-bf16-rounding/).
inline bool bf16_linear_rounds_x(CpuLevel level, std::int64_t rows) {
  if (level == CpuLevel::Amx) return rows >= gemm_min_rows(level, DType::BF16);
  return level == CpuLevel::Avx512Bf16 && rows >= kBf16PairMinRows;
}

// The hand-written decode kernels (16-bit and q8_0 weights, and every tile; not the avx2 one-row
// kernel of 16-bit weights, linear_16bit.cpp says why) ask for the weight bytes this far ahead of
// the ones they are multiplying, one software prefetch per 64-byte line (prefetch_weights). A
// thread's weights are one contiguous stream, but the hardware prefetcher alone left those kernels
// at 9-11 GB/s on a Xeon (2 threads, membw 13.7 GB/s): their compute per byte is 2-4x that of f32,
// so fewer loads are in flight. The prefetch goes into L2, not L1 (likely why: prefetches into L1
// take L1's few miss buffers, and the kernel's own loads queue behind them). Measured (Xeon with
// AVX-512, 2 threads, synthetic:gpt2 tg64, 3 interleaved rounds,
// docs/results/2026-12-03-decode-prefetch): against L1 at 4 KB, L2 at 8 KB gave batch-1 decode
// 1.12x with f16 weights, 1.27x with bf16 and 1.14x with q8_0 (all three now at 90% of the read
// roof or more), 1.22x with 16-bit weights at the avx2 level; batch 8 1.03-1.10x; f32 batch 1
// (Eigen's GEMV, no software prefetch) unchanged. In L2, 4-32 KB ahead were within noise of
// each other; in L1, 1 KB was best and 1.5 KB on worse. (AMD's cores fill L1 for every hint: on
// a Zen 3 the avx2 batch-1 kernel of 16-bit weights ran faster with none,
// docs/results/2026-12-07-avx2-16bit-row-prefetch/, and batch 1 reads as streams far apart without
// it, matrix_vector_streams below; the avx2 q8_0 kernel of 2 to 15 rows, ~4x the compute per
// byte, needs it: linear_q8_0.cpp; so do the avx2 tiles: without it, decode of 4 and 8 rows
// ran 0.60-0.83x, f32, f16 and bf16, docs/results/2026-12-07-avx2-tiles-no-prefetch/.)
constexpr int kWeightPrefetchBytes = 8192;

// Asks for the 64-byte line at `ahead` into L2 (prefetcht1 on x86), for reading.
inline void prefetch_weights(const void* ahead) { __builtin_prefetch(ahead, 0, 2); }

// Splits `outputs` into one block per thread, each a multiple of kOutputGrain; `task(first,
// width)` handles outputs [first, first + width). Must not throw.
// 32 outputs are two 64-byte lines of f32 (no two threads write one line) and one tile of the
// prefill GEMM's micro-kernel (ops/cpu/gemm.cpp); with it, SmolLM2's 576-wide projections split
// 288 + 288 over 2 threads, where a grain of 64 gave 320 + 256 and the decode step waited for
// the larger half: its o and down projections ran 1.05x and 1.07x faster per call, q/k/v
// 1.04x (q8_0, 2-core Xeon, per-op medians of 6 interleaved profiled runs). GPT-2's and Llama
// 3.2's widths split the same either way.
constexpr std::int64_t kOutputGrain = 32;
template <typename Task>
void for_each_output_block(const Context& ctx, std::int64_t outputs, Task task) {
  const std::int64_t threads = ctx.threads();
  const std::int64_t block =
      ((outputs + threads - 1) / threads + kOutputGrain - 1) / kOutputGrain * kOutputGrain;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t first = 0; first < outputs; first += block) {
    task(first, std::min(block, outputs - first));
  }
}

// One decode output: out = dot + b[o] (b may be null), or out += that with `accumulate`
// (linear_residual adds the layer's output to the residual stream in place).
inline void store_output(float& out, float dot, const float* b, std::int64_t o, bool accumulate) {
  const float value = dot + (b ? b[o] : 0.0f);
  out = accumulate ? out + value : value;
}

// The decode kernels of one weight row at a time: outputs [first, first + width) of
// y [rows, outputs] = x [rows, in] W^T (+ b), each weight row against up to kMaxDotRows input
// rows per call of kDotRows(w_row, x_rows, ldx, count, k, sums), which sets
// sums[r] = dot(w_row, x row r) for r < count.
constexpr int kMaxDotRows = 4;

// Calls fixed(std::integral_constant<int, R>) with R = `rows` (1 to kMaxDotRows): from a run-time
// row count to the kernel written for a fixed one, whose accumulators then live in registers.
template <typename Fixed>
void with_fixed_rows(int rows, Fixed&& fixed) {
  switch (rows) {
    case 1:
      return fixed(std::integral_constant<int, 1>{});
    case 2:
      return fixed(std::integral_constant<int, 2>{});
    case 3:
      return fixed(std::integral_constant<int, 3>{});
    default:
      return fixed(std::integral_constant<int, kMaxDotRows>{});
  }
}
// The kernels written for 1 to kMaxRows rows, by row count: element R - 1 is make(R), where make
// takes std::integral_constant<int, R> and returns the kernel instantiated for R rows (the
// blocked GEMMs' tiles: a tile of the last rows of a block runs only the rows it has).
template <typename Kernel, int kMaxRows, typename Make>
constexpr std::array<Kernel, kMaxRows> kernels_by_rows(Make make) {
  return [&]<std::size_t... kIndex>(std::index_sequence<kIndex...>) {
    return std::array<Kernel, kMaxRows>{
        make(std::integral_constant<int, static_cast<int>(kIndex) + 1>{})...};
  }
  (std::make_index_sequence<kMaxRows>());
}

// Calls tile(first, count) for the tiles of at most max_rows rows that cover `rows` rows: as few
// as that allows, their sizes within one of each other (64 rows in tiles of at most 12: 11, 11,
// 11, 11, 10, 10, not five of 12 and a slow one of 4).
template <typename Tile>
void for_each_even_tile(std::int64_t rows, std::int64_t max_rows, Tile tile) {
  const std::int64_t tiles = (rows + max_rows - 1) / max_rows;
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::int64_t first = t * rows / tiles;
    tile(first, (t + 1) * rows / tiles - first);
  }
}

template <auto kDotRows, typename Element>
void matrix_vector_dot_rows(const float* x, const Element* w, const float* b, float* y,
                            std::int64_t rows, std::int64_t in, std::int64_t outputs,
                            std::int64_t first, std::int64_t width, bool accumulate) {
  float sums[kMaxDotRows];
  for (std::int64_t o = first; o < first + width; ++o) {
    for (std::int64_t r0 = 0; r0 < rows; r0 += kMaxDotRows) {
      const int count = static_cast<int>(std::min<std::int64_t>(kMaxDotRows, rows - r0));
      kDotRows(w + o * in, x + r0 * in, in, count, in, sums);
      for (int r = 0; r < count; ++r) {
        store_output(y[(r0 + r) * outputs + o], sums[r], b, o, accumulate);
      }
    }
  }
}

// Batch 1 at the avx2 level (f32, 16-bit and q8_0 weights) and from the avx512 level on (f32 and
// 16-bit weights, ops/cpu/dot_tile.h's dot_block_avx512): outputs [first, first + width) of
// y = x W^T (+ b) for one input row, the block cut into kWeightStreams runs of consecutive weight
// rows and one row of each run multiplied together, so that each core reads kWeightStreams
// sequential streams far apart (each run is hundreds of KB), x loaded once for all of them.
// dots(o, stride, std::integral_constant<int, S>, sums) sets sums[s] = dot(x, weight row
// o + s stride) for s < S; the width % kWeightStreams rows left go one at a time (S = 1).
// Why: with one stream per core memory latency stays exposed (on a Zen 3 perf put half of the
// one-row kernel's samples on the first load of each line); streams far apart keep more lines in
// flight (`bench --op membw`'s "streams" way reads 4 per thread at ~1.2x its one-stream ways),
// where two adjacent rows at a time, one stream jumping back and forth inside each 4 KB page,
// read slower than one (docs/results/2026-12-07-avx2-16bit-row-pair/). Measured (Zen 3, 2
// threads, tg64, 6 interleaved rounds, docs/results/2026-12-07-avx2-decode-streams/): against
// one row at a time (16-bit, q8_0) or Eigen's GEMV (f32), batch-1 decode f16 1.31x / 1.44x,
// bf16 1.23x / 1.36x, q8_0 1.20x / 1.21x, f32 1.04x / 1.14x (GPT-2 / SmolLM2 shape); 4 streams
// against 2 within noise but for GPT-2 f16 (1.25x). At avx2 no software prefetch (AMD's cores
// fill L1 for every hint); from avx512 on each stream is prefetched as dot_rows_avx512's one is:
// against that one stream, GPT-2 f32 1.07x, f16 1.04x, bf16 1.07x, SmolLM2 shape 1.05x, 1.03x,
// 1.06x (Zen 4, 12 interleaved rounds whose own ranges were 0.8-1.5x: its read bandwidth swung
// 45-125% of the probe; docs/results/2026-12-07-avx512-decode-streams/).
// Cost: width K weights read once.
constexpr int kWeightStreams = 4;
template <typename Dots>
void matrix_vector_streams(std::int64_t first, std::int64_t width, const float* b, float* y,
                           bool accumulate, Dots dots) {
  const std::int64_t run = width / kWeightStreams;
  float sums[kWeightStreams];
  for (std::int64_t o = first; o < first + run; ++o) {
    dots(o, run, std::integral_constant<int, kWeightStreams>{}, sums);
    for (int s = 0; s < kWeightStreams; ++s) {
      store_output(y[o + s * run], sums[s], b, o + s * run, accumulate);
    }
  }
  for (std::int64_t o = first + run * kWeightStreams; o < first + width; ++o) {
    dots(o, 0, std::integral_constant<int, 1>{}, sums);
    store_output(y[o], sums[0], b, o, accumulate);
  }
}

}  // namespace attnscope::ops::cpu
