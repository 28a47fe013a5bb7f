// gemm_q8_0_vnni (ops/cpu/gemm_q8_0_vnni.h): q8_0 prefill with both operands in bytes.
//
// The math: x is quantized exactly as in decode (ops/cpu/linear_q8_0.h: blocks of 32 bytes qx
// with an f32 scale dx), and with k = 32 c + i every output is
//   y[n][j] = b[j] + sum over blocks c of (dw[j][c] dx[n][c]) * sum_{i<32} qw[j][k] qx[n][k],
// the inner sum an exact integer, the scaling and the sum over blocks in f32.
//
// vpdpbusd adds to each of 16 int32 lanes the sum of 4 products of an unsigned byte and a signed
// byte. The weights stay signed; x is made unsigned by adding 128 (in two's complement, flipping
// its top bit), which adds 128 sum_i qw[i] to a block's sum. That is taken off where the sum
// starts: each block's accumulators begin at its compensation -128 sum_i qw[i], computed when the
// weights are packed. The partial sums stay within 32 * 255 * 127 + 32 * 128 * 127 < 2^21 and the
// result within 32 * 127^2 < 2^24: exact in int32 and again as a float.
//
// The micro-kernel: a tile of kTileRows = 6 rows x 32 outputs, with 12 int32 accumulators for the
// current block and 12 f32 accumulators for the sum over blocks (24 of the 32 zmm registers). Per
// 4 inputs of a block: two loads of 16 outputs' 4 weight bytes, six broadcasts of a row's 4 input
// bytes, 12 vpdpbusd (64 byte products each, where an FMA does 16 f32 multiply-adds). Per block
// (8 such steps): per row, its two int32 sums converted to f32 and added times dw dx (7
// instructions with the broadcast of dx). Rows past a multiple of 6 run a kernel of their own row
// count; outputs past a multiple of 32 are zeros in the packed panel and masked out of the stores.
//
// Packing: the weights in panels of 32 outputs, for each block the bytes in quads (for each 4
// inputs, the 32 outputs' 4 bytes side by side: two vectors, made by block_quads,
// ops/cpu/q8_0_quads.h), then the block's 32 scales dw as f32 and its 32 compensations.
// Vectorized, the packing made batched decode through this GEMM 1.04-1.20x at 8 to 48 rows and
// pp512 1.00x (GPT-2) and 1.08x (SmolLM2) (docs/results/2026-12-04-vnni-q8-prefill/pack/).
// x is quantized once per call into rows of unsigned bytes, read in place (a block of a row is
// 32 contiguous bytes; the kernel's six rows are six streams).
//
// Loops: each thread walks its outputs in panels of 32, packs one (all K: 30 KB at K = 768,
// 120 KB at K = 3072, in L1 or L2) and runs the kernel on every row tile against it; the tile's
// x (6 K bytes) comes from L2, y is written once.
//
// Cost: quantizing x (rows x in values, shared by the threads), packing the weights (outputs x in
// bytes once per call), and rows x outputs x in byte products, 4x as many per instruction as the
// f32 GEMM's multiply-adds, plus the per-block scaling (~40% more instructions). Measured on a
// 2-core Zen 4 (docs/results/2026-12-04-vnni-q8-prefill/): pp512 2.0-2.8x the f32 GEMM on
// dequantized weights, the linear layers at 400-440 GFLOP/s (a byte product counted as 2 FLOPs),
// ~45% of the two cores' vpdpbusd rate (docs/results/2026-12-04-q8-decode-lanes/vnni_rate.cpp).
//
// Error: the decode kernels' (linear_q8_0.h, derived in tests/test_q8_0.cpp): x's quantization
// error, the weights' dw/2, and f32 rounding along a path of K/32 blocks plus the bias and y.
#include "ops/cpu/gemm_q8_0_vnni.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "ops/cpu/linear_q8_0.h"
#include "ops/cpu/output_blocks.h"
#include "ops/cpu/q8_0_quads.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::ops::cpu {

#if defined(__x86_64__)

namespace {

constexpr std::int64_t kBlock = kQ8_0BlockElements;
constexpr int kTileRows = 6;
constexpr int kPanelOutputs = 32;
constexpr std::int64_t kPanelBlockBytes = kQuadsPerBlock * kPanelOutputs * 4;

// One panel of 32 weight rows, `blocks` blocks each: per block its bytes in quads (for each 4
// inputs, the 32 outputs' 4 bytes side by side), its 32 scales dw as f32 and its 32
// compensations -128 sum_i qw[i]. Rows past the weights' last are zeros.
struct PackedPanel {
  std::vector<std::uint8_t> bytes;         // blocks x kPanelBlockBytes
  std::vector<float> scales;               // blocks x 32
  std::vector<std::int32_t> compensation;  // blocks x 32
};

// Weight rows [0, outputs) (outputs <= 32), each `blocks` blocks, into `panel`: per block and
// 16 outputs, their quads and compensations by block_quads (ops/cpu/q8_0_quads.h), stored as
// they are.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void pack_panel(
    const BlockQ8_0* w, std::int64_t outputs, std::int64_t blocks, PackedPanel& panel) {
  // Every element is written below: resized, not cleared.
  panel.bytes.resize(static_cast<std::size_t>(blocks * kPanelBlockBytes));
  panel.scales.resize(static_cast<std::size_t>(blocks * kPanelOutputs));
  panel.compensation.resize(static_cast<std::size_t>(blocks * kPanelOutputs));
  const auto row_stride = static_cast<std::int64_t>(blocks * sizeof(BlockQ8_0));
  for (std::int64_t c = 0; c < blocks; ++c) {
    for (int j = 0; j < kPanelOutputs; ++j) {
      panel.scales[c * kPanelOutputs + j] =
          j < outputs ? f16_to_f32(w[j * blocks + c].scale) : 0.0f;
    }
    for (int half = 0; half < 2; ++half) {
      // A second half past the last weight row (outputs <= 16) is zeros.
      const auto count = static_cast<int>(std::clamp<std::int64_t>(outputs - 16 * half, 0, 16));
      const std::int8_t* first = count > 0 ? w[16 * half * blocks + c].q : nullptr;
      __m512i quads[kQuadsPerBlock];
      const __m512i compensation = block_quads(first, row_stride, count, quads);
      for (int quad = 0; quad < kQuadsPerBlock; ++quad) {
        _mm512_storeu_si512(
            panel.bytes.data() + c * kPanelBlockBytes + quad * kPanelOutputs * 4 + 64 * half,
            quads[quad]);
      }
      _mm512_storeu_si512(panel.compensation.data() + c * kPanelOutputs + 16 * half, compensation);
    }
  }
}

// y rows [0, kRows) x the panel's 32 outputs (c: row stride ldc; only the outputs in `keep`'s
// two 16-bit halves are stored) = x rows times the panel, plus bias (32 floats, or null), plus
// y's old values with `accumulate`. x: kRows rows of `blocks` * 32 unsigned bytes (qx ^ 0x80,
// row stride ldx), scales dx (row stride `blocks`).
template <int kRows>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void tile_kernel(
    const std::uint8_t* x, std::int64_t ldx, const float* dx, std::int64_t blocks,
    const PackedPanel& panel, const float* bias, float* c, std::int64_t ldc, std::uint32_t keep,
    bool accumulate) {
  __m512 sums[kRows][2];
  for (auto& row : sums) row[0] = row[1] = _mm512_setzero_ps();
  for (std::int64_t block = 0; block < blocks; ++block) {
    const std::uint8_t* bytes = panel.bytes.data() + block * kPanelBlockBytes;
    const float* scales = panel.scales.data() + block * kPanelOutputs;
    const std::int32_t* compensation = panel.compensation.data() + block * kPanelOutputs;
    const __m512i start[2] = {_mm512_loadu_si512(compensation),
                              _mm512_loadu_si512(compensation + 16)};
    __m512i dots[kRows][2];
    for (auto& row : dots) row[0] = start[0], row[1] = start[1];
    const std::uint8_t* inputs = x + block * kBlock;
    for (int quad = 0; quad < kQuadsPerBlock; ++quad) {
      const __m512i weights[2] = {_mm512_loadu_si512(bytes + quad * kPanelOutputs * 4),
                                  _mm512_loadu_si512(bytes + quad * kPanelOutputs * 4 + 64)};
      for (int r = 0; r < kRows; ++r) {
        std::int32_t four;
        std::memcpy(&four, inputs + r * ldx + 4 * quad, 4);
        const __m512i input = _mm512_set1_epi32(four);
        dots[r][0] = _mm512_dpbusd_epi32(dots[r][0], input, weights[0]);
        dots[r][1] = _mm512_dpbusd_epi32(dots[r][1], input, weights[1]);
      }
    }
    const __m512 weight_scales[2] = {_mm512_loadu_ps(scales), _mm512_loadu_ps(scales + 16)};
    for (int r = 0; r < kRows; ++r) {
      const __m512 input_scale = _mm512_set1_ps(dx[r * blocks + block]);
      for (int half = 0; half < 2; ++half) {
        sums[r][half] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots[r][half]),
                            _mm512_mul_ps(weight_scales[half], input_scale), sums[r][half]);
      }
    }
  }
  const __mmask16 masks[2] = {static_cast<__mmask16>(keep), static_cast<__mmask16>(keep >> 16)};
  for (int half = 0; half < 2; ++half) {
    const __m512 b =
        bias ? _mm512_maskz_loadu_ps(masks[half], bias + 16 * half) : _mm512_setzero_ps();
    for (int r = 0; r < kRows; ++r) {
      float* out = c + r * ldc + 16 * half;
      __m512 value = _mm512_add_ps(sums[r][half], b);
      if (accumulate) value = _mm512_add_ps(_mm512_maskz_loadu_ps(masks[half], out), value);
      _mm512_mask_storeu_ps(out, masks[half], value);
    }
  }
}

using TileKernel = void (*)(const std::uint8_t*, std::int64_t, const float*, std::int64_t,
                            const PackedPanel&, const float*, float*, std::int64_t, std::uint32_t,
                            bool);

// kTileKernels[r - 1] computes r rows.
constexpr std::array<TileKernel, kTileRows> kTileKernels = kernels_by_rows<TileKernel, kTileRows>(
    [](auto rows) -> TileKernel { return tile_kernel<decltype(rows)::value>; });

}  // namespace

void gemm_q8_0_vnni(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b,
                    float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                    bool accumulate) {
  const std::int64_t blocks = in / kBlock;
  const QuantizedRows quantized = quantize_rows(ctx, x, rows, in, true);
  const auto* const unsigned_x = reinterpret_cast<const std::uint8_t*>(quantized.bytes);
  const float* const dx = quantized.scales;

  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
    thread_local PackedPanel panel;
    for (std::int64_t p = first; p < first + width; p += kPanelOutputs) {
      const std::int64_t panel_outputs = std::min<std::int64_t>(kPanelOutputs, first + width - p);
      pack_panel(w + p * blocks, panel_outputs, blocks, panel);
      const std::uint32_t keep = panel_outputs == kPanelOutputs ? ~0u : (1u << panel_outputs) - 1u;
      for (std::int64_t r = 0; r < rows; r += kTileRows) {
        const std::int64_t tile_rows = std::min<std::int64_t>(kTileRows, rows - r);
        kTileKernels[static_cast<std::size_t>(tile_rows - 1)](
            unsigned_x + r * in, in, dx + r * blocks, blocks, panel, b ? b + p : nullptr,
            y + r * outputs + p, outputs, keep, accumulate);
      }
    }
  });
}

#else

void gemm_q8_0_vnni(const Context&, const float*, const BlockQ8_0*, const float*, float*,
                    std::int64_t, std::int64_t, std::int64_t, bool) {
  check(false, "gemm_q8_0_vnni", "AVX-512 VNNI exists on x86-64 CPUs only");
}

#endif  // __x86_64__

}  // namespace attnscope::ops::cpu
