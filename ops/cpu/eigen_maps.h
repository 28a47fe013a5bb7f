// Views of attnscope's row-major float buffers as Eigen matrices, for the ops that hand their
// matrix products to Eigen. A Map copies nothing: it names a pointer, a shape and a stride.
// Unaligned, because a view may start anywhere inside a tensor (a head, a tile).
#pragma once

#include <Eigen/Core>
#include <cstdint>

namespace attnscope::ops {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMatrix, Eigen::Unaligned>;
using MatrixMap = Eigen::Map<RowMatrix, Eigen::Unaligned>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf, Eigen::Unaligned>;

// Columns [first, first + width) of y [rows, outputs] get x [rows, in] times the f32 weight rows
// w_block [width, in] transposed, plus b[first..] when b is given: y = x W^T + b, or y += x W^T + b
// with `accumulate`. Eigen's GEMM always adds into its destination (`=` first zeroes it), so
// writing the bias first and then adding the product fuses the bias into the GEMM for free
// instead of a second pass over y; with `accumulate` the bias costs one pass either way.
inline void gemm_output_columns(const float* x, const float* w_block, const float* b, float* y,
                                std::int64_t rows, std::int64_t in, std::int64_t outputs,
                                std::int64_t first, std::int64_t width, bool accumulate) {
  const ConstMatrixMap input(x, rows, in);
  const ConstMatrixMap weight(w_block, width, in);
  Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>> result(
      y + first, rows, width, Eigen::OuterStride<>(outputs));
  if (b) {
    const Eigen::Map<const Eigen::RowVectorXf> bias(b + first, width);
    if (accumulate) {
      result.rowwise() += bias;
    } else {
      result.rowwise() = bias;
    }
  } else if (!accumulate) {
    result.setZero();
  }
  result.noalias() += input * weight.transpose();
}

}  // namespace attnscope::ops
