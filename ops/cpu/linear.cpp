// ops::linear on the cpu (arguments checked by ops/linear.cpp): matrix-vector products for a
// few rows, a blocked GEMM (ops/cpu/gemm.h) for many; at the avx2 level, batches between the two
// put the input rows in the vector lanes (ops/cpu/decode_lanes_avx2.h says from how many rows).
#include "ops/linear.h"

#include <Eigen/Core>

#include "ops/cpu/decode_lanes_avx2.h"
#include "ops/cpu/dot_tile.h"
#include "ops/cpu/eigen_maps.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/output_blocks.h"

namespace attnscope::ops::cpu {

namespace {

// Each thread streams its contiguous block of weight rows from memory exactly once: every input
// row is multiplied with a weight row while that row (4 C bytes) sits in L1, so a batch of a
// few rows costs the same memory traffic as one. One row goes through output_blocks.h's
// matrix_vector_streams (4 weight rows far apart at a time) from the avx2 level on. At avx2:
// batch-1 decode 1.04x GPT-2, 1.14x SmolLM2 shape against Eigen's row-major matrix-vector kernel,
// which takes several adjacent rows at a time (Zen 3, 6 interleaved rounds,
// docs/results/2026-12-07-avx2-decode-streams/); from avx512 on, prefetched, 1.07x and 1.05x
// against one row at a time (dot_rows_avx512; Zen 4, 12 interleaved rounds, within its noise,
// docs/results/2026-12-07-avx512-decode-streams/). From the avx512 level on, 2 and 3 rows go one
// weight row at a time against all of them, the stream prefetched into L2 (dot_rows_avx512), 4
// rows or more in tiles of 2 weight rows x up to 8 input rows (ops/cpu/dot_tile.h's
// matrix_vector_avx512 chooses); at avx2, 2 rows or more through the avx2 tiles; below
// avx2 one row through Eigen's kernel, a few through one Eigen dot product per (weight row, input
// row). Measured (Zen 5, 2 threads, synthetic:gpt2 tg32, interleaved rounds,
// docs/results/2026-12-01-cpu-decode-rows): with Eigen's dot products batch 3 ran below batch
// 4's tiles per step; one weight row at a time gave batch 3 1.18x and batch 2 1.06x
// (8 rounds); the tiles at 2 rows were ~10% slower. Batch 1 through dot_rows_avx512 instead of
// Eigen's GEMV, on huge pages (2-core Xeon, 3 interleaved rounds,
// docs/results/2026-12-03-f32-decode-row): GPT-2 1.02-1.07x, SmolLM2 shape 1.06-1.08x (85-87% of
// the read roof -> 92-93%). The streams keep its sums and their order, so a row's result is the
// same whether it is decoded alone or beside one or two others. With `accumulate` the products are
// added to y instead of replacing it.
void matrix_vector_rows(const Context& ctx, CpuLevel level, const float* x, const float* w,
                        const float* b, float* y, std::int64_t rows, std::int64_t in,
                        std::int64_t outputs, bool accumulate) {
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
#if defined(__x86_64__)
    if (level >= CpuLevel::Avx512) {
      matrix_vector_avx512<F32Weights>(x, w, b, y, rows, in, outputs, first, width, accumulate);
      return;
    }
    if (level == CpuLevel::Avx2) {
      matrix_vector_avx2<F32Weights>(x, w, b, y, rows, in, outputs, first, width, accumulate);
      return;
    }
#endif
    if (rows == 1) {
      Eigen::Map<Eigen::VectorXf> result(y + first, width);
      const ConstMatrixMap weights(w + first * in, width, in);
      const ConstVectorMap input(x, in);
      if (accumulate) {
        result.noalias() += weights * input;
      } else {
        result.noalias() = weights * input;
      }
      if (b) result += Eigen::Map<const Eigen::VectorXf>(b + first, width);
      return;
    }
    for (std::int64_t o = first; o < first + width; ++o) {
      const ConstVectorMap weight_row(w + o * in, in);
      for (std::int64_t r = 0; r < rows; ++r) {
        store_output(y[r * outputs + o], weight_row.dot(ConstVectorMap(x + r * in, in)), b, o,
                     accumulate);
      }
    }
  });
}

// Each thread computes a block of output columns with a single-threaded blocked GEMM, the bias
// fused into it (ops/cpu/gemm.h).
void gemm_rows(const Context& ctx, CpuLevel level, const float* x, const float* w, const float* b,
               float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
               bool accumulate) {
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
    gemm_output_columns(level, x, w + first * in, b, y, rows, in, outputs, first, width,
                        accumulate);
  });
}

}  // namespace

void linear(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out,
            bool accumulate) {
  const std::int64_t rows = x.dim(0);
  const std::int64_t in = x.dim(1);
  const std::int64_t outputs = weight.dim(0);
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  // Read here, outside the threads' parallel region (an unknown ATTNSCOPE_CPU_LEVEL throws).
  const CpuLevel level = cpu_level();
  if (decode_in_lanes_avx2(level, DType::F32, rows)) {
    decode_lanes_avx2(ctx, x.data<float>(), weight.data<float>(), DType::F32, b, out.data<float>(),
                      rows, in, outputs, accumulate);
  } else if (rows < gemm_min_rows(level, DType::F32)) {
    matrix_vector_rows(ctx, level, x.data<float>(), weight.data<float>(), b, out.data<float>(),
                       rows, in, outputs, accumulate);
  } else {
    gemm_rows(ctx, level, x.data<float>(), weight.data<float>(), b, out.data<float>(), rows, in,
              outputs, accumulate);
  }
}

}  // namespace attnscope::ops::cpu
