// decode_q8_0_vnni (ops/cpu/decode_q8_0_vnni.h): a batch's decode step through a q8_0 linear
// layer on vpdpbusd, with the input rows in the vector lanes.
//
// The math is the byte GEMM's (ops/cpu/gemm_q8_0_vnni.cpp): x quantized as in decode, per block
// an exact integer dot product of bytes, scaled by dw dx and summed over blocks in f32. The
// operands trade places: the GEMM puts 16 outputs in a vector's lanes and broadcasts a row's 4
// input bytes, which needs the weights packed (on every call: only 24-32 rows or more pay that
// back); here 16 input rows share a vector and an output's 4 weight bytes are broadcast straight
// from its q8_0 block, so the weights are read as they are stored and x (a few rows) is
// rearranged instead, once per call (block_quads, ops/cpu/q8_0_quads.h).
// vpdpbusd's unsigned operand is now the weights: each broadcast has its top bits flipped (qw +
// 128, never above 255 since qw >= -127), which adds 128 sum qx to a block's sum; every block's
// accumulators start at -128 sum qx instead, one vector for all outputs. Partial sums stay within
// 32 * 255 * 127 + 32 * 128 * 127 < 2^21: exact in int32, and the result as a float.
//
// The kernel: kGroup = 12 outputs against a tile of up to 16 rows, with 12 int32 accumulators
// for the current block and 12 f32 ones for the sum over blocks. Per 4 inputs of a block: one
// load of the tile's quad vector, then per output a vpxord whose operand is the 4 weight bytes
// broadcast from memory, and a vpdpbusd (64 byte products). Per block and output: its int32 sums
// converted and added times dw dx (dx a vector of the 16 rows' scales, dw one f16 widened). The
// 12 weight rows are 12 streams of 34-byte blocks; with more than 16 rows the next tile reuses
// them from L1 or L2. While it multiplies a block, it asks for the same block of the next
// group's rows into L2 (prefetch_weights; the next call reads them); without, the kernel waited
// on memory (likely: 12 interleaved streams are more than the hardware prefetcher follows well).
// Decode tokens/s of a batch with it against without (Zen 4, 2 threads, synthetic:gpt2 q8_0, 3
// interleaved rounds, docs/results/2026-12-05-q8-lanes-prefetch/): 1.35x at 9 rows, 1.43x at 16,
// 1.22x at 32, 1.08x at 64 (where each group's weights serve 4 tiles), 1.02x at 127. A fixed
// distance (8-32 KB on each stream) was no steadier than one group on and falls inside the group
// for wide inputs.
// 12 outputs against 8 (Zen 4, 2 threads, synthetic:gpt2 q8_0, 3 interleaved rounds): 1.09x at
// 8 and 16 rows, 1.03x at 32; 16 outputs (32 accumulators: spills) 0.88-0.92x of 12. The flip
// is not what bounds it: without the vpxord (wrong sums, timed only) decode ran 1.03-1.05x
// (docs/results/2026-12-04-q8-decode-lanes/explore/no-xor-timing/).
//
// Cost: quantizing and arranging x (rows x in bytes), the weights read once (34 bytes per 32),
// and per tile in * outputs / 4 vpdpbusd however many of its 16 lanes hold rows: a tile of 8 rows
// costs what one of 16 does. Measured against the decode kernels of one weight row at a time
// (linear_q8_0.cpp) in linear_q8_0.h (q8_0_decode_in_lanes), against the byte GEMM in
// output_blocks.h (gemm_min_rows).
//
// Error: the decode kernels' (linear_q8_0.h): the sum over blocks in f32 runs in another order.
#include "ops/cpu/decode_q8_0_vnni.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/cpu/linear_q8_0.h"
#include "ops/cpu/output_blocks.h"
#include "ops/cpu/q8_0_quads.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::ops::cpu {

#if defined(__x86_64__)

namespace {

constexpr std::int64_t kBlock = kQ8_0BlockElements;
constexpr int kLanes = 16;  // input rows per tile
constexpr int kGroup = 12;  // outputs per kernel call
constexpr std::int64_t kQuadBytes = 64;

// x's rows in tiles of 16, each block as block_quads arranges it: per tile and block, 8 quad
// vectors, the 16 rows' compensations -128 sum qx and their scales dx (rows past the last: zero
// bytes, scale 0).
struct RowTiles {
  std::vector<std::int8_t> quads;   // tiles x blocks x 8 x 64
  std::vector<std::int32_t> start;  // tiles x blocks x 16
  std::vector<float> scales;        // tiles x blocks x 16
};

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void arrange_rows(
    const QuantizedRows& x, std::int64_t rows, std::int64_t in, RowTiles& tiles) {
  const std::int64_t blocks = in / kBlock;
  const std::int64_t count = (rows + kLanes - 1) / kLanes * blocks;  // tile blocks
  // Every element is written below: resized, not cleared.
  tiles.quads.resize(static_cast<std::size_t>(count * kQuadsPerBlock * kQuadBytes));
  tiles.start.resize(static_cast<std::size_t>(count * kLanes));
  tiles.scales.resize(static_cast<std::size_t>(count * kLanes));
  for (std::int64_t r0 = 0; r0 < rows; r0 += kLanes) {
    const auto tile_rows = static_cast<int>(std::min<std::int64_t>(kLanes, rows - r0));
    for (std::int64_t c = 0; c < blocks; ++c) {
      const std::int64_t at = r0 / kLanes * blocks + c;
      __m512i quads[kQuadsPerBlock];
      const __m512i start = block_quads(x.bytes + r0 * in + c * kBlock, in, tile_rows, quads);
      for (int q = 0; q < kQuadsPerBlock; ++q) {
        _mm512_storeu_si512(tiles.quads.data() + (at * kQuadsPerBlock + q) * kQuadBytes, quads[q]);
      }
      _mm512_storeu_si512(tiles.start.data() + at * kLanes, start);
      for (int i = 0; i < kLanes; ++i) {
        tiles.scales[at * kLanes + i] = i < tile_rows ? x.scales[(r0 + i) * blocks + c] : 0.0f;
      }
    }
  }
}

// One tile (its blocks' quads, starts and scales) against weight rows [0, outputs) (outputs <=
// kGroup; row j at w + j * blocks): dots[j][i] = the dot product of row j with the tile's row i.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c"))) void group_kernel(
    const std::int8_t* quads, const std::int32_t* start, const float* dx, const BlockQ8_0* w,
    std::int64_t blocks, int outputs, float (&dots)[kGroup][kLanes]) {
  // Missing outputs of a last group repeat its last row; their dots are not used.
  const BlockQ8_0* row[kGroup];
  for (int j = 0; j < kGroup; ++j) row[j] = w + std::min(j, outputs - 1) * blocks;
  const __m512i top_bits = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 sums[kGroup];
  for (__m512& sum : sums) sum = _mm512_setzero_ps();
  for (std::int64_t c = 0; c < blocks; ++c) {
    __m512i block_sums[kGroup];
    for (__m512i& sum : block_sums) sum = _mm512_loadu_si512(start + c * kLanes);
    for (const BlockQ8_0* r : row) prefetch_weights(r + kGroup * blocks + c);
    for (int q = 0; q < kQuadsPerBlock; ++q) {
      const __m512i inputs = _mm512_loadu_si512(quads + (c * kQuadsPerBlock + q) * kQuadBytes);
      for (int j = 0; j < kGroup; ++j) {
        std::int32_t four;
        std::memcpy(&four, row[j][c].q + 4 * q, 4);
        const __m512i weights = _mm512_xor_si512(_mm512_set1_epi32(four), top_bits);
        block_sums[j] = _mm512_dpbusd_epi32(block_sums[j], weights, inputs);
      }
    }
    const __m512 input_scales = _mm512_loadu_ps(dx + c * kLanes);
    for (int j = 0; j < kGroup; ++j) {
      const __m512 scales = _mm512_mul_ps(input_scales, _mm512_set1_ps(_cvtsh_ss(row[j][c].scale)));
      sums[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(block_sums[j]), scales, sums[j]);
    }
  }
  for (int j = 0; j < kGroup; ++j) _mm512_storeu_ps(dots[j], sums[j]);
}

}  // namespace

void decode_q8_0_vnni(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b,
                      float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                      bool accumulate) {
  const std::int64_t blocks = in / kBlock;
  // The calling thread's buffers, kept between calls; the workers read them through pointers.
  thread_local RowTiles tiles;
  arrange_rows(quantize_rows(ctx, x, rows, in, false), rows, in, tiles);
  const std::int8_t* const quads = tiles.quads.data();
  const std::int32_t* const start = tiles.start.data();
  const float* const dx = tiles.scales.data();
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
    alignas(64) float dots[kGroup][kLanes];
    for (std::int64_t o = first; o < first + width; o += kGroup) {
      const auto group = static_cast<int>(std::min<std::int64_t>(kGroup, first + width - o));
      for (std::int64_t r0 = 0; r0 < rows; r0 += kLanes) {
        const std::int64_t at = r0 / kLanes * blocks;
        group_kernel(quads + at * kQuadsPerBlock * kQuadBytes, start + at * kLanes,
                     dx + at * kLanes, w + o * blocks, blocks, group, dots);
        for (std::int64_t i = 0; i < std::min<std::int64_t>(kLanes, rows - r0); ++i) {
          for (int j = 0; j < group; ++j) {
            store_output(y[(r0 + i) * outputs + o + j], dots[j][i], b, o + j, accumulate);
          }
        }
      }
    }
  });
}

#else

void decode_q8_0_vnni(const Context&, const float*, const BlockQ8_0*, const float*, float*,
                      std::int64_t, std::int64_t, std::int64_t, bool) {
  check(false, "decode_q8_0_vnni", "AVX-512 VNNI exists on x86-64 CPUs only");
}

#endif  // __x86_64__

}  // namespace attnscope::ops::cpu
