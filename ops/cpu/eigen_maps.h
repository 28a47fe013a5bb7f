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

}  // namespace attnscope::ops
