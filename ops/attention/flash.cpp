// `flash` attention: FlashAttention's tiling and online softmax. No [Tq, Tk] score matrix ever
// exists, only score tiles in registers, shared memory or a thread's cache, and key tiles
// entirely above the diagonal are never visited (causal tile skipping).
//
// The algorithm, the same on every device. Query row i of head (b, h) at position
// p_i = kv_len - Tq + i keeps a running max m, a running sum l and an unnormalised output O (all
// f32) while it walks its visible keys 0..p_i one tile at a time:
//
//   x_j = scale q_i . k_j                          (a [rows, keys] GEMM per tile)
//   m' = max(m, max_j x_j),   P_j = exp(x_j - m'),  and P_j = 0 for masked j
//   l = exp(m - m') l + sum_j P_j,   O = exp(m - m') O + sum_j P_j v_j,   m = m'
//   after the last tile: out_i = O / l
//
// A masked score is never exponentiated and never enters the max: there is no mask value, so
// nothing can overflow in any dtype. Each row's first tile holds key 0, so m is finite from then
// on. Key rows at or beyond kv_len are never read.
//
// Two paths, chosen by flash_plan (flash.h) and named by the same steps on both devices:
//   tiled (one step, "flash.tiled"): one task (CPU) or CTA (GPU) per tile of query rows of one
//     (batch, head), looping over key tiles from key 0 to the tile's last query position.
//   split-KV, flash-decoding (two steps, "flash.split_kv_partials" and "flash.split_kv_combine"),
//     for at most kSplitKvMaxQueries query rows: a decode step has one row per (batch, head),
//     too little work to fill the threads or SMs, so each head's keys are cut into `chunks`
//     ranges, each leaving an unnormalised partial (m_c, l_c, O_c); the combine merges them
//     per row with the log-sum-exp rescaling
//       M = max_c m_c,   w_c = exp(m_c - M),   out = sum_c w_c O_c / sum_c w_c l_c.
//
// Cost model (cost_model below; each device's plan function gives the temporaries, because the
// tiles it cuts the work into are its own): steps 1 (tiled) or 2 (split-KV). Temporaries: on the
// CPU one score tile and one (O, m, l) state per thread (flash_cpu.cpp), plus the partials when
// split; on a GPU none (tiled) or the partials, B Hq chunks Tq (D + 2) floats. Memory: q read and
// out written once; K and V read once per query tile up to the diagonal (mostly from cache) or
// exactly once when split; no score-sized traffic at all. FLOPs: 4 D per visible (query, key)
// pair plus the masked part of the diagonal tiles; one exp per score.
#include "ops/attention/flash.h"

#include <limits>
#include <string>

#include "ops/check.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

constexpr const char* kWhere = "attention flash";

// What the GPU kernels need beyond validate_call: a head dim they are instantiated for, and
// sizes that fit the 32-bit ints they index with.
void check_gpu_limits(const Call& call) {
  const std::int64_t d = call.head_dim();
  check(d >= 1 && d <= kFlashMaxHeadDim, kWhere,
        [&] { return "head dim " + std::to_string(d) + " is not supported (1 to 256)"; });
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  check(call.batch() * call.q_heads() <= kIntMax && call.k.dim(2) <= kIntMax, kWhere,
        "batch x heads and the cache length must fit in 32-bit ints");
}

// The bodies for `device` (a CPU-only build never has a CUDA tensor, nor a CUDA table).
const FlashBodies& bodies_for(Device device) {
  if constexpr (kCudaBuild) {
    if (device == Device::CUDA) return cuda_flash_bodies();
  }
  return cpu_flash_bodies();
}

class Flash final : public Backend {
 public:
  std::string_view name() const override { return "flash"; }
  std::string_view summary() const override {
    return "tiled online softmax with causal tile skipping; split-KV (flash-decoding) for decode";
  }

  CostModel cost_model(const Context& ctx, const Shape& shape) const override {
    const FlashPlan plan = bodies_for(ctx.device()).plan(ctx, shape);
    return cost_of(shape, plan.temporary_bytes, plan.path == FlashPath::tiled ? 1 : 2);
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.flash", "attention");
    validate_call(ctx, call, kWhere);
    const Device device = call.q.device();
    if (device == Device::CUDA) check_gpu_limits(call);
    const FlashBodies& bodies = bodies_for(device);
    const Shape shape = shape_of(call);
    const FlashPlan plan = bodies.plan(ctx, shape);
    if (plan.path == FlashPath::tiled) {
      profiler::KernelStep step(ctx, kFlashTiledStep);
      bodies.tiled(ctx, call);
      return;
    }
    Tensor partials =
        Tensor::empty({split_kv_partial_floats(shape, plan.chunks)}, DType::F32, ctx.allocator());
    {
      profiler::KernelStep step(ctx, kFlashPartialsStep);
      bodies.split_kv_partials(ctx, call, plan, partials);
    }
    profiler::KernelStep step(ctx, kFlashCombineStep);
    bodies.split_kv_combine(ctx, call, plan, partials);
  }
};

}  // namespace

const Backend& flash_backend() {
  static const Flash backend;
  return backend;
}

}  // namespace attnscope::ops::attention
