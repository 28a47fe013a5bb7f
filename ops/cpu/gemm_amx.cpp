// gemm_amx (ops/cpu/gemm_amx.h): y (=|+=) x W^T + b with bf16, f16 or q8_0 weights, on AMX's bf16
// tiles.
//
// The math is ops/cpu/gemm.cpp's: y[n][j] = b[j] + sum_k x[n][k] W[j][k], 2 N M K FLOPs for N rows,
// M outputs and K inputs. AMX adds a product of bf16 tiles into an f32 tile: TDPBF16PS does
// C += A B for A [16 x 32] bf16, B [32 x 16] bf16 and C [16 x 16] f32, 16,384 FLOPs in one
// instruction (~16 cycles on Sapphire Rapids: 1,024 FLOPs a cycle, 16x AVX-512's two f32 FMAs).
//
// The precision. x is f32; a product of two bf16 numbers is exact in f32, and TDPBF16PS adds each
// pair of products, then the pair's sum to C, both in f32.
//  - bf16 weights are tiles as they are, and x is rounded to bf16 (Bf16Format::narrow, as the
//    avx512bf16 level rounds it: output_blocks.h's bf16_linear_rounds_x), the precision a bf16
//    model has on the GPU and in PyTorch: |x~ - x| <= 2^-8 |x|, the size of the weights' own
//    rounding. Against x~ W^T (W as stored) the error is f32 summation's bound for K + 2 terms.
//  - f16 and q8_0 weights hold more bits than bf16, so x keeps 16 of its 24: it is split into two
//    bf16 numbers, hi = bf16(x) and lo = bf16(x - hi) (x - hi is exact in f32), with
//    |x - hi - lo| <= 2^-16 |x|; and W is split as x is, W_hi = bf16(W) and W_lo = bf16(W - W_hi)
//    (Sapphire Rapids has no f16 or int8-times-f32 tiles). Three products are kept,
//    hi W_hi^T + lo W_hi^T + hi W_lo^T, 3K roundings; the one dropped, lo W_lo^T, is below
//    2^-16 |x w|. An f16 weight is exactly W_hi + W_lo (11 significant bits = 8 + at most 3, and
//    f16's range lies inside bf16's), so its error is at most 2^-15 (1 + 2^-9) sum_k |x_k w_k|.
//    A q8_0 weight d q is exact in f32 but has up to 18 bits (an 11-bit d times a 7-bit q), so
//    W_hi + W_lo misses it by up to 2^-16 |w|: at most 2^-16 (3 + 2^-7) sum_k |x_k w_k| in all.
//    Both plus the bound for 3K + 2 terms; 3x the tile work of bf16.
// tests/test_linear.cpp and tests/test_q8_0.cpp check exactly those bounds at this level. Storing
// W in bf16, f16 or q8_0 already moved each weight by about 2^-8, 2^-11 or 2^-8 of itself, 8 to
// 256x more. The limits: the tiles treat subnormal inputs as zero and flush subnormal results (a
// product below 2^-126 is lost), and where x is split, |x| >= 0x1.FEp127, an infinite x or an
// infinite f16 weight gives NaN (hi rounds to inf, and inf - inf is NaN) where f32 gives a number
// or inf.
//
// Layout (a tile load reads 16 rows of 64 bytes at a stride; here every tile is 1 KB in a row):
//  - x: rounded (bf16 weights), or hi and lo, each [N' x K'] bf16, N' and K' rounded up to 32 with
//    zeros, as A tiles of 16 rows of 32 inputs: for each 16 rows, their tiles for inputs 0-31,
//    32-63, ... (a_tile_index).
//  - W: for each group of 16 outputs and each step of 32 inputs (for q8_0 one block) one 1 KB B
//    tile per part (bf16: the weights; f16 and q8_0: W_hi, then W_lo), whose row p holds for each
//    of the 16 outputs its inputs 2p and 2p + 1 side by side (the pairs TDPBF16PS multiplies).
//    Each thread packs its own outputs once per call, as widened_gemm.h widens them, in panels of
//    at most kMaxPanelBytes.
//  - The kernel keeps a 32 x 32 block of y in four C tiles (tmm0-3); per step of 32 inputs it
//    loads two B tiles (tmm6-7), then two A tiles of x (tmm4-5): x rounded, or its lo and then its
//    hi; with two parts it then loads W_lo's two B tiles and multiplies them by hi, still in
//    tmm4-5. bf16: 4 tile products per 4 tile loads; f16 and q8_0: 12 per 8, in AMX's 8 tile
//    registers. The rows go in chunks whose x tiles take at most kMaxChunkBytes (within L2), and
//    in a chunk the blocks go down a column of 32 outputs before the next: that column's B tiles
//    (K / 16 KB per part) stay in L1 or L2 while the chunk's x tiles stream past in order.
// Cost: W is read and packed once per call (2 M K bytes for 16-bit weights), x rounded (2 N K
// bytes) or split (4 N K) once in passes of at most kMaxPassRows rows (that memory stays
// bounded); the tiles run 2 N M K FLOPs (bf16) or 3 x 2 N M K (f16, q8_0) at 16x the f32 FMA
// rate, so about 16x (5.3x) the f32 GEMM's peak. A chunk's x tiles (one copy both threads read)
// are read again for every column of 32 outputs, M / 32 times, from L2; each thread's packed
// panel (up to 16 MiB) once per chunk.
// Measured (2-core Xeon at 2.6 GHz, bf16 pp512, docs/results/2026-12-04-amx-prefill/): GPT-2's
// linear layers at ~940 GFLOP/s of x W^T against ~300 through the f32 GEMM, with x then split in
// two parts for bf16 weights too; buffers on 64-byte lines (one line per tile row) gave 1.05x.
// x rounded instead (one part, docs/results/2026-12-06-amx-bf16-rounding/): pp512 1.28-1.38x.
// Then x in whole tiles and the blocks column by column (before: row by row, x's tiles read at a
// stride of 2 K bytes), and the rows in chunks: pp512 1.07-1.23x (bf16), 1.21-1.30x (f16,
// q8_0); GPT-2's linear layers then at ~1,700-1,950 GFLOP/s in a warm profile, a third of the
// tiles' peak (docs/results/2026-12-06-amx-column-order/). Tried and slower: the rows' x kept in
// L1 in slices of 256 inputs while the weight tiles stream past (0.9x); panels of 1 MB or
// 512 KB, to stay in L2 (0.85x); chunks of 512 KB.
#include "ops/cpu/gemm_amx.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/cpu/amx_tiles.h"
#include "ops/cpu/dot_tile.h"
#include "ops/cpu/output_blocks.h"
#include "ops/cpu/transpose16.h"
#include "runtime/error.h"
#include "runtime/q8_0.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::ops::cpu {

#if defined(__x86_64__)

namespace {

constexpr std::int64_t kBlock = 32;  // a block of y: 2 x 2 C tiles
constexpr std::int64_t kPairsPerTile = kTileRows * kTileDepth / 2;
constexpr std::int64_t kMaxPanelBytes = std::int64_t{16} << 20;
constexpr std::int64_t kMaxPassRows = 512;
constexpr std::int64_t kMaxChunkBytes = std::int64_t{1} << 20;

// Where input k of row r lands in x's A tiles (see the top): tile (r / 16, k / 32), row r % 16.
std::int64_t a_tile_index(std::int64_t r, std::int64_t k, std::int64_t depth) {
  return (r / kTileRows) * kTileRows * depth + (k / kTileDepth) * kTileRows * kTileDepth +
         (r % kTileRows) * kTileDepth + k % kTileDepth;
}

// Row r of x (`in` floats at `x`) rounded to bf16 (see the top) into A tiles, zeros from `in` to
// `depth`.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void round_row(
    const float* x, std::int64_t in, std::int64_t depth, std::int64_t r, std::uint16_t* rounded) {
  for (std::int64_t k = 0; k < depth; k += 16) {
    const __mmask16 valid = first_lanes(std::max<std::int64_t>(in - k, 0));
    const __m256i bits = Bf16Format::narrow(_mm512_maskz_loadu_ps(valid, x + k));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(rounded + a_tile_index(r, k, depth)), bits);
  }
}

// Row r of x (`in` floats at `x`) as hi and lo (see the top) into A tiles, zeros from `in` to
// `depth`.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c,avx512bf16"))) void split_row(
    const float* x, std::int64_t in, std::int64_t depth, std::int64_t r, std::uint16_t* hi,
    std::uint16_t* lo) {
  for (std::int64_t k = 0; k < depth; k += 16) {
    const __mmask16 valid = first_lanes(std::max<std::int64_t>(in - k, 0));
    const __m512 value = _mm512_maskz_loadu_ps(valid, x + k);
    const auto high = (__m256i)_mm512_cvtneps_pbh(value);
    const auto low = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(value, Bf16Format::widen(high)));
    const std::int64_t at = a_tile_index(r, k, depth);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + at), high);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + at), low);
  }
}

// The hi or lo part (see the top; part 0 or 1) of 32 f32 values, inputs 0-15 in `low` and 16-31
// in `high`, as 16 pairs of bf16 in one register; one_part does one value.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c,avx512bf16"))) __m512 pairs_part(
    __m512 low, __m512 high, int part) {
  const auto hi = (__m512i)_mm512_cvtne2ps_pbh(high, low);  // inputs 0-15 from `low`
  if (part == 0) return _mm512_castsi512_ps(hi);
  const __m512 low_rest = _mm512_sub_ps(low, Bf16Format::widen(_mm512_castsi512_si256(hi)));
  const __m512 high_rest = _mm512_sub_ps(high, Bf16Format::widen(_mm512_extracti64x4_epi64(hi, 1)));
  return (__m512)_mm512_cvtne2ps_pbh(high_rest, low_rest);
}

std::uint16_t one_part(float value, int part) {
  const std::uint16_t hi = f32_to_bf16(value);
  return part == 0 ? hi : f32_to_bf16(value - bf16_to_f32(hi));
}

// How a weight format becomes bf16 tiles (see the top): kParts B tiles per 16 outputs and 32
// inputs, multiplied by x rounded to bf16 (kSplitsX false) or by its hi and lo. row() finds weight
// row `index` of W [outputs, in]; pairs() reads inputs [32 step, 32 step + 32) of a row as 16 pairs
// of bf16 in one register, one() input k alone, both as part `part` (0: the weight, or its hi; 1:
// its lo).
struct SixteenBitRows {  // bf16 and f16: `in` 16-bit words a row
  using Weight = std::uint16_t;
  static const Weight* row(const Weight* w, std::int64_t index, std::int64_t in) {
    return w + index * in;
  }
};

struct Bf16Parts : SixteenBitRows {
  static constexpr int kParts = 1;
  static constexpr bool kSplitsX = false;
  __attribute__((target("avx512f"))) static __m512 pairs(const Weight* row, std::int64_t step,
                                                         int) {
    return _mm512_loadu_ps(row + step * kTileDepth);  // bf16 bits, no arithmetic
  }
  static std::uint16_t one(const Weight* row, std::int64_t k, int) { return row[k]; }
};

struct F16Parts : SixteenBitRows {
  static constexpr int kParts = 2;
  static constexpr bool kSplitsX = true;
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c,avx512bf16"))) static __m512 pairs(
      const Weight* row, std::int64_t step, int part) {
    const auto* bits = reinterpret_cast<const __m256i*>(row + step * kTileDepth);
    return pairs_part(F16Format::widen(_mm256_loadu_si256(bits)),
                      F16Format::widen(_mm256_loadu_si256(bits + 1)), part);  // exact widening
  }
  static std::uint16_t one(const Weight* row, std::int64_t k, int part) {
    return one_part(f16_to_f32(row[k]), part);
  }
};

// q8_0: a step of 32 inputs is one block, whose weights d q are exact in f32 (an 11-bit d times a
// 7-bit q); hi + lo keeps 16 of their up to 18 bits.
struct Q8_0Parts {
  using Weight = BlockQ8_0;
  static constexpr int kParts = 2;
  static constexpr bool kSplitsX = true;
  static const Weight* row(const Weight* w, std::int64_t index, std::int64_t in) {
    return w + index * (in / kQ8_0BlockElements);
  }
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c,avx512bf16"))) static __m512 pairs(
      const Weight* row, std::int64_t step, int part) {
    const BlockQ8_0& block = row[step];
    const __m512 d = _mm512_set1_ps(f16_to_f32(block.scale));
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.q));
    const __m512 low = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)));
    const __m512 high = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
    return pairs_part(_mm512_mul_ps(d, low), _mm512_mul_ps(d, high), part);
  }
  static std::uint16_t one(const Weight* row, std::int64_t k, int part) {
    const BlockQ8_0& block = row[k / kQ8_0BlockElements];
    return one_part(f16_to_f32(block.scale) * static_cast<float>(block.q[k % kQ8_0BlockElements]),
                    part);
  }
};

// Part `part` of the B tile (see the top) of weight rows [first, first + 16) and inputs
// [32 step, 32 step + 32), all of them in W: as 32-bit pairs the tile is the 16 x 16 transpose
// of the rows' pairs, done in registers (transpose16.h).
template <typename Parts>
__attribute__((target("avx512f"))) void pack_whole_tile(const typename Parts::Weight* w,
                                                        std::int64_t in, std::int64_t first,
                                                        std::int64_t step, int part,
                                                        std::uint32_t* tile) {
  __m512 pairs[kTileRows];
  for (std::int64_t n = 0; n < kTileRows; ++n) {
    pairs[n] = Parts::pairs(Parts::row(w, first + n, in), step, part);
  }
  transpose16(pairs);
  for (std::int64_t p = 0; p < kTileRows; ++p) _mm512_storeu_ps(tile + p * kTileRows, pairs[p]);
}

// The same for a tile at an edge: rows past `valid_rows` and inputs past `in` are zeros.
template <typename Parts>
void pack_edge_tile(const typename Parts::Weight* w, std::int64_t in, std::int64_t first,
                    std::int64_t valid_rows, std::int64_t step, int part, std::uint32_t* tile) {
  for (std::int64_t n = 0; n < kTileRows; ++n) {
    for (std::int64_t p = 0; p < kTileDepth / 2; ++p) {
      const std::int64_t k = step * kTileDepth + 2 * p;
      std::uint32_t pair = 0;  // inputs k (low half) and k + 1 (high half), as memory holds them
      if (n < valid_rows) {
        const auto* row = Parts::row(w, first + n, in);
        const std::uint32_t low = k < in ? Parts::one(row, k, part) : 0u;
        const std::uint32_t high = k + 1 < in ? Parts::one(row, k + 1, part) : 0u;
        pair = low | high << 16;
      }
      tile[p * kTileRows + n] = pair;
    }
  }
}

// Weight rows [first, first + count) of W [outputs, in] as B tiles (see the top), count rounded up
// to kBlock with zero outputs and `in` to `depth` with zero inputs.
template <typename Parts>
void pack_weights(const typename Parts::Weight* w, std::int64_t in, std::int64_t depth,
                  std::int64_t first, std::int64_t count, std::uint32_t* tiles) {
  const std::int64_t steps = depth / kTileDepth;
  const std::int64_t whole_steps = in / kTileDepth;
  const std::int64_t groups = round_up(count, kBlock) / kTileRows;
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t valid_rows = std::clamp<std::int64_t>(count - g * kTileRows, 0, kTileRows);
    const std::int64_t group_first = first + std::min(g * kTileRows, count - 1);
    for (std::int64_t s = 0; s < steps; ++s) {
      for (int part = 0; part < Parts::kParts; ++part) {
        std::uint32_t* tile = tiles + ((g * steps + s) * Parts::kParts + part) * kPairsPerTile;
        if (valid_rows == kTileRows && s < whole_steps) {
          pack_whole_tile<Parts>(w, in, group_first, s, part, tile);
        } else {
          pack_edge_tile<Parts>(w, in, group_first, valid_rows, s, part, tile);
        }
      }
    }
  }
}

// `count` elements of `buffer` starting on a 64-byte line, so that each 64-byte tile row is one
// cache line, not two. The buffer is grown, never shrunk (as widened_gemm.h's panels): resizing
// down and up again between matrices would zero-fill the regrown part on every call.
template <typename T>
T* line_aligned(std::vector<T>& buffer, std::size_t count) {
  constexpr std::size_t kLine = 64;
  if (buffer.size() < count + kLine / sizeof(T)) buffer.resize(count + kLine / sizeof(T));
  const auto address = reinterpret_cast<std::uintptr_t>(buffer.data());
  return buffer.data() + ((kLine - address % kLine) % kLine) / sizeof(T);
}

// Columns [first, first + count) of y from one packed panel (`tiles`, count rounded up to kBlock)
// and x's A tiles as Parts multiplies it (`padded_rows` x `depth` each; x_lo unused when x is
// rounded), column by column (see the top). The tiles must be configured on this thread.
template <typename Parts>
__attribute__((target("amx-tile,amx-bf16"))) void multiply_panel(
    const std::uint16_t* x_hi, const std::uint16_t* x_lo, std::int64_t rows,
    std::int64_t padded_rows, std::int64_t depth, const std::uint32_t* tiles, const float* b,
    float* y, std::int64_t outputs, std::int64_t first, std::int64_t count, bool accumulate) {
  const std::int64_t steps = depth / kTileDepth;
  constexpr std::int64_t kStepPairs = Parts::kParts * kPairsPerTile;  // one step's B tiles
  alignas(64) float block[kBlock * kBlock];
  const std::int64_t row_bytes = depth * 2 * (Parts::kSplitsX ? 2 : 1);  // x's, in A tiles
  const std::int64_t chunk_rows = std::max(kBlock, kMaxChunkBytes / row_bytes / kBlock * kBlock);
  for (std::int64_t chunk = 0; chunk < padded_rows; chunk += chunk_rows) {
    const std::int64_t chunk_end = std::min(padded_rows, chunk + chunk_rows);
    for (std::int64_t col = 0; col < count; col += kBlock) {
      for (std::int64_t row = chunk; row < chunk_end; row += kBlock) {
        const std::uint32_t* left = tiles + (col / kTileRows) * steps * kStepPairs;
        const std::uint32_t* right = left + steps * kStepPairs;
        zero_block_tiles();
        for (std::int64_t s = 0; s < steps; ++s) {
          _tile_loadd(6, left + s * kStepPairs, 64);
          _tile_loadd(7, right + s * kStepPairs, 64);
          // hi last: W_lo's products reuse it
          for (const std::uint16_t* x_part : {x_lo, x_hi}) {
            if (x_part == nullptr) continue;  // x rounded: one part
            const std::uint16_t* top = x_part + a_tile_index(row, s * kTileDepth, depth);
            _tile_loadd(4, top, 64);
            _tile_loadd(5, top + kTileRows * depth, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
          }
          if constexpr (Parts::kParts == 2) {  // f16 and q8_0: hi W_lo^T
            _tile_loadd(6, left + s * kStepPairs + kPairsPerTile, 64);
            _tile_loadd(7, right + s * kStepPairs + kPairsPerTile, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
          }
        }
        store_block_tiles(block, kBlock);
        const std::int64_t block_rows = std::min(kBlock, rows - row);
        const std::int64_t block_cols = std::min(kBlock, count - col);
        for (std::int64_t r = 0; r < block_rows; ++r) {
          float* out = y + (row + r) * outputs + first + col;
          for (std::int64_t c = 0; c < block_cols; ++c) {
            const float value = block[r * kBlock + c] + (b ? b[first + col + c] : 0.0f);
            out[c] = accumulate ? out[c] + value : value;
          }
        }
      }
    }
  }
}

// gemm_amx for at most kMaxPassRows rows, with weights in the format of `Parts`.
template <typename Parts>
void multiply_pass(const Context& ctx, const float* x, const void* weights, const float* b,
                   float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                   bool accumulate) {
  const auto* w = static_cast<const typename Parts::Weight*>(weights);
  const std::int64_t depth = round_up(in, kTileDepth);
  const std::int64_t padded_rows = round_up(rows, kBlock);
  thread_local std::vector<std::uint16_t> x_hi, x_lo;  // the calling thread's, read by every one
  const auto part_size = static_cast<std::size_t>(padded_rows * depth);
  std::uint16_t* hi = line_aligned(x_hi, part_size);
  std::uint16_t* lo = Parts::kSplitsX ? line_aligned(x_lo, part_size) : nullptr;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t r = 0; r < padded_rows; ++r) {
    const float* x_row = x + std::min(r, rows - 1) * in;
    const std::int64_t valid = r < rows ? in : 0;
    if (Parts::kSplitsX) {
      split_row(x_row, valid, depth, r, hi, lo);
    } else {
      round_row(x_row, valid, depth, r, hi);
    }
  }
  const std::int64_t panel_bytes_per_output = depth * 2 * Parts::kParts;
  const std::int64_t panel_outputs =
      std::max(kBlock, kMaxPanelBytes / panel_bytes_per_output / kBlock * kBlock);
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
    thread_local std::vector<std::uint32_t> tile_buffer;
    const std::int64_t panel_pairs =
        round_up(std::min(panel_outputs, width), kBlock) * depth / 2 * Parts::kParts;
    std::uint32_t* tiles = line_aligned(tile_buffer, static_cast<std::size_t>(panel_pairs));
    configure_tiles();
    for (std::int64_t p = first; p < first + width; p += panel_outputs) {
      const std::int64_t count = std::min(panel_outputs, first + width - p);
      pack_weights<Parts>(w, in, depth, p, count, tiles);
      // GCC 12's _tile_loadd names no memory operand: without this compiler barrier the packing's
      // stores could be moved past the tile loads that read them.
      std::atomic_signal_fence(std::memory_order_seq_cst);
      multiply_panel<Parts>(hi, lo, rows, padded_rows, depth, tiles, b, y, outputs, p, count,
                            accumulate);
    }
    release_tiles();
  });
}

}  // namespace

void gemm_amx(const Context& ctx, const float* x, const void* w, DType weight_dtype, const float* b,
              float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs, bool accumulate) {
  using Pass = void (*)(const Context&, const float*, const void*, const float*, float*,
                        std::int64_t, std::int64_t, std::int64_t, bool);
  const Pass pass = weight_dtype == DType::BF16   ? multiply_pass<Bf16Parts>
                    : weight_dtype == DType::F16  ? multiply_pass<F16Parts>
                    : weight_dtype == DType::Q8_0 ? multiply_pass<Q8_0Parts>
                                                  : nullptr;
  check(pass != nullptr, "gemm_amx", "weights must be bf16, f16 or q8_0");
  for (std::int64_t row = 0; row < rows; row += kMaxPassRows) {
    pass(ctx, x + row * in, w, b, y + row * outputs, std::min(kMaxPassRows, rows - row), in,
         outputs, accumulate);
  }
}

#else

void gemm_amx(const Context&, const float*, const void*, DType, const float*, float*, std::int64_t,
              std::int64_t, std::int64_t, bool) {
  check(false, "gemm_amx", "AMX tiles exist on x86-64 CPUs only");
}

#endif

}  // namespace attnscope::ops::cpu
