// `naive` attention on the CPU: eager, one whole-tensor step at a time, as hand-written PyTorch
// does it:
//
//   scores = q @ k^T                      (batched GEMM)        -> new [B, Hq, Tq, Tk]
//   scaled = scores * scale               (elementwise)         -> new [B, Hq, Tq, Tk]
//   masked = scaled.masked_fill(causal, -inf)  (copy, then fill) -> new [B, Hq, Tq, Tk]
//   probs  = softmax(masked, dim=-1)      (row-wise)            -> new [B, Hq, Tq, Tk]
//   out    = probs @ v                    (batched GEMM)        -> out
//
// Cost model (f32, Tk = kv_len): 5 steps per call; temporaries 4 B Hq Tq Tk floats
// (16 B Hq Tq Tk bytes), all live at the peak; about 9 passes over a score-sized tensor
// (written by the GEMM, read+written by scale, copy, fill, read+written by softmax's passes, read
// by the second GEMM). FLOPs: 4 B Hq Tq Tk D for the two GEMMs, the rest is memory traffic.
// The masked value is -inf: exact in every float dtype, and softmax maps it to a probability of
// 0; a causal row always keeps its diagonal, so no row is entirely masked.
#include "ops/attention/naive_cpu.h"

#include <Eigen/Core>
#include <algorithm>
#include <limits>

#include "ops/check.h"
#include "ops/softmax.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix, Eigen::Unaligned>;
using Map = Eigen::Map<RowMatrix, Eigen::Unaligned>;

class NaiveCpu final : public Backend {
 public:
  std::string_view name() const override { return "naive"; }
  std::string_view summary() const override {
    return "eager: GEMM, scale, out-of-place mask (copy + fill), softmax, GEMM";
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.naive", "attention");
    validate_call(call);
    require_cpu_f32(call.q, "attention naive", "q");
    const std::int64_t batch = call.batch();
    const std::int64_t q_heads = call.q_heads();
    const std::int64_t group = q_heads / call.kv_heads();
    const std::int64_t q_len = call.q_len();
    const std::int64_t kv_len = call.kv_len;
    const std::int64_t head_dim = call.head_dim();
    const std::int64_t capacity = call.k.dim(2);
    const std::int64_t heads = batch * q_heads;
    const std::int64_t score_size = q_len * kv_len;
    Allocator& allocator = ctx.allocator();
    const Shape score_shape = {batch, q_heads, q_len, kv_len};

    // Where head (b, h) finds its K and V rows: kv head h / group of the same batch entry.
    auto kv_offset = [&](std::int64_t bh) {
      const std::int64_t b = bh / q_heads;
      const std::int64_t kv_head = (bh % q_heads) / group;
      return (b * call.kv_heads() + kv_head) * capacity * head_dim;
    };

    Tensor scores = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "naive.qk_gemm");
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
      for (std::int64_t bh = 0; bh < heads; ++bh) {
        const ConstMap q(call.q.data<float>() + bh * q_len * head_dim, q_len, head_dim);
        const ConstMap k(call.k.data<float>() + kv_offset(bh), kv_len, head_dim);
        Map(scores.data<float>() + bh * score_size, q_len, kv_len).noalias() = q * k.transpose();
      }
    }

    Tensor scaled = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "naive.scale");
      const float* in = scores.data<float>();
      float* dst = scaled.data<float>();
      const std::int64_t n = scores.numel();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) dst[i] = in[i] * call.scale;
    }

    Tensor masked = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "naive.mask_copy");
      std::copy_n(scaled.data<float>(), scaled.numel(), masked.data<float>());
    }
    {
      profiler::Scope step(ctx, "naive.mask_fill");
      const float masked_value = -std::numeric_limits<float>::infinity();
      float* m = masked.data<float>();
      const std::int64_t first_position = kv_len - q_len;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
      for (std::int64_t row = 0; row < heads * q_len; ++row) {
        const std::int64_t visible = first_position + row % q_len + 1;  // keys 0..position
        std::fill(m + row * kv_len + visible, m + (row + 1) * kv_len, masked_value);
      }
    }

    Tensor probs = Tensor::empty(score_shape, DType::F32, allocator);
    softmax(ctx, masked, probs);

    {
      profiler::Scope step(ctx, "naive.pv_gemm");
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
      for (std::int64_t bh = 0; bh < heads; ++bh) {
        const ConstMap p(probs.data<float>() + bh * score_size, q_len, kv_len);
        const ConstMap v(call.v.data<float>() + kv_offset(bh), kv_len, head_dim);
        Map(call.out.data<float>() + bh * q_len * head_dim, q_len, head_dim).noalias() = p * v;
      }
    }
  }
};

}  // namespace

const Backend& naive_cpu_backend() {
  static const NaiveCpu backend;
  return backend;
}

}  // namespace attnscope::ops::attention
