// How the cpu linear kernels (ops/cpu/linear.cpp for f32 weights, linear_16bit.cpp for 16-bit
// ones, linear_q8_0.cpp for q8_0 blocks) share out their work: the decode/prefill threshold, the
// split of the output features into one contiguous block per thread, how far ahead the
// hand-written decode kernels prefetch their weight stream, how a decode kernel writes one
// output, and the loop of the kernels that take one weight row at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/context.h"
#include "runtime/cpu_features.h"

namespace attnscope::ops::cpu {

// Below this many rows (decode of a batch) each weight row is read once and used for every input
// row while in L1: memory-bound, like one row. From it on (prefill), a blocked GEMM, which is
// FLOP-bound and repacks the weights, pays off. At the avx2 level the GEMM is Eigen's, which
// packs the weights on every call: the avx2 tiles (dot_tile.h) stay ahead of it for longer
// (measured: see kAvx2GemmMinRows).
constexpr std::int64_t kGemmMinRows = 16;
constexpr std::int64_t kAvx2GemmMinRows = 64;
inline std::int64_t gemm_min_rows(CpuLevel level) {
  return level == CpuLevel::Avx2 ? kAvx2GemmMinRows : kGemmMinRows;
}

// The 16-bit and q8_0 decode kernels ask for the weight bytes this far ahead of the ones they are
// multiplying (one software prefetch per 64-byte line). A thread's weights are one contiguous
// stream, but the hardware prefetcher alone left those kernels at 9-11 GB/s on this machine's
// Xeon (2 threads, membw 13.7 GB/s): their compute per byte is 2-4x that of f32, so fewer loads
// are in flight. With it, `attnscope bench` tg128 on synthetic:gpt2 went from 1.24x to 1.92x f32
// with bf16 weights and from 2.13x to 2.58x with q8_0, the 16-bit kernels now reading at the
// machine's bandwidth (docs/results/2026-12-01-cpu-decode/). The distance was chosen on a
// throwaway sweep (2, 4 and 8 KB; 8 KB was worse), not a committed benchmark.
constexpr int kWeightPrefetchBytes = 4096;

// Splits `outputs` into one block per thread, each a multiple of 64 so that no two threads write
// one cache line; `task(first, width)` handles outputs [first, first + width). Must not throw.
template <typename Task>
void for_each_output_block(const Context& ctx, std::int64_t outputs, Task task) {
  const std::int64_t threads = ctx.threads();
  const std::int64_t block = ((outputs + threads - 1) / threads + 63) / 64 * 64;
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

}  // namespace attnscope::ops::cpu
