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
// (the online-softmax update: the running max m, the rescale factor exp(m - m') and the row sum
// l; written once per device, online_softmax_update in cpu/flash.cpp and cuda/online_softmax.cuh,
// and used by every path). A masked score is never exponentiated and never enters the max: there is
// no mask value, so nothing can overflow in any dtype. Each row's first tile holds key 0, so m is
// finite from then on. Key rows at or beyond kv_len are never read.
//
// Two paths, chosen by each device's flash_plan (cpu/flash.h, cuda/flash.h) and named by the same
// steps on both devices:
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
// CPU one score tile and one (O, m, l) state per thread (cpu/flash.cpp), plus the partials when
// split; on a GPU none (tiled) or the partials, B Hq chunks Tq (D + 2) floats. Memory: q read and
// out written once; K and V read once per query tile up to the diagonal (mostly from cache) or
// exactly once when split; no score-sized traffic at all. FLOPs: 4 D per visible (query, key)
// pair plus the masked part of the diagonal tiles; one exp per score.
#include "ops/attention/flash.h"

#include <limits>
#include <string>

#include "ops/attention/cpu/flash.h"
#include "ops/attention/cuda/flash.h"
#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

constexpr const char* kWhere = "attention flash";

// What the GPU kernels need beyond the dtype rule: a head dim they are instantiated for, and
// sizes that fit the 32-bit ints they index with (`rows`: the query rows or heads they grid over;
// `keys`: the cache rows one head holds). "" when the call fits.
std::string gpu_limits_refusal(std::int64_t head_dim, std::int64_t rows, std::int64_t keys) {
  if (head_dim < 1 || head_dim > kFlashMaxHeadDim) {
    return "head dim " + std::to_string(head_dim) + " is not supported (1 to 256)";
  }
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  if (rows > kIntMax || keys > kIntMax) {
    return "the rows, heads and cache lengths must fit in 32-bit ints";
  }
  return "";
}

void check_gpu_limits(std::int64_t head_dim, std::int64_t rows, std::int64_t keys) {
  const std::string refusal = gpu_limits_refusal(head_dim, rows, keys);
  check(refusal.empty(), kWhere, refusal);
}

// Which path, chunks and temporaries a call of `shape` takes on the context's device, from that
// device's plan (cpu/flash.cpp, cuda/flash_split_kv.cu). Every device dispatch below follows
// ops/dispatch.h: a CPU-only build never has a CUDA context or tensor.
FlashPlan plan_of(const Context& ctx, const Shape& shape) {
  if (ctx.device() == Device::CUDA) {
    if constexpr (kCudaBuild) return cuda::flash_plan(ctx, shape);
  }
  return cpu::flash_plan(ctx, shape);
}

FlashPlan paged_plan_of(const Context& ctx, const RaggedShape& shape) {
  if (ctx.device() == Device::CUDA) {
    if constexpr (kCudaBuild) return cuda::flash_paged_plan(ctx, shape);
  }
  return cpu::flash_paged_plan(ctx, shape);
}

class Flash final : public Backend {
 public:
  std::string_view name() const override { return "flash"; }
  std::string_view summary() const override {
    return "tiled online softmax with causal tile skipping; split-KV (flash-decoding) for decode";
  }

  CostModel paged_cost_model(const Context& ctx, const RaggedShape& shape) const override {
    return ragged_cost_of(shape, paged_plan_of(ctx, shape).temporary_bytes, 1);
  }

  // One step, "flash.paged": the tiled kernel of each device, reading key tiles through the
  // block tables (cpu/flash.cpp, cuda/flash_paged.cu).
  void attend_paged(Context& ctx, const PagedCall& call) const override {
    profiler::Scope scope(ctx, "attention.flash.paged", "attention");
    validate_paged_call(ctx, call, kWhere);
    if (ctx.profiler() != nullptr) {
      const CostModel cost = paged_cost_model(ctx, ragged_shape_of(call));
      scope.set_work(cost.flops, static_cast<double>(cost.bytes_with_temporaries()));
    }
    const bool on_gpu = call.q.device() == Device::CUDA;
    if (on_gpu) {
      check_gpu_limits(call.head_dim(), call.q.dim(0) * call.q_heads(),
                       call.key_blocks.dim(0) * call.batch->block_tokens);
    }
    profiler::KernelStep step(ctx, kFlashPagedStep);
    if (on_gpu) {
      if constexpr (kCudaBuild) cuda::flash_paged(ctx, call);
    } else {
      cpu::flash_paged(ctx, call);
    }
  }

  CostModel cost_model(const Context& ctx, const Shape& shape) const override {
    const FlashPlan plan = plan_of(ctx, shape);
    return cost_of(shape, plan.temporary_bytes, plan.path == FlashPath::tiled ? 1 : 2);
  }

  // The GPU's split-KV kernel reads each row's key count where Call::kv_lens gives one.
  bool reads_row_lengths(const Context& ctx, const Shape& shape) const override {
    return ctx.device() == Device::CUDA && plan_of(ctx, shape).path == FlashPath::split_kv;
  }

  std::string refusal(const Context& ctx, const Shape& shape) const override {
    std::string reason = dtype_refusal(ctx.device(), shape.dtype, false);
    if (reason.empty() && ctx.device() == Device::CUDA) {
      reason = gpu_limits_refusal(shape.head_dim, shape.heads(), shape.kv_len);
    }
    return reason;
  }

  Plan plan(const Context& ctx, const Shape& shape) const override {
    const FlashPlan flash = plan_of(ctx, shape);
    Plan plan;
    plan.materialises_scores = false;
    if (flash.path == FlashPath::tiled) {
      plan.path = "tiled";
      plan.steps = {kFlashTiledStep};
    } else {
      plan.path = "split-KV in " + std::to_string(flash.chunks) + " chunks";
      plan.steps = {kFlashPartialsStep, kFlashCombineStep};
    }
    plan.why = flash.why;
    plan.engine = flash.how;
    return plan;
  }

  void attend(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.flash", "attention");
    validate_call(ctx, call, *this, kWhere);  // the tensors live on ctx's device
    const bool on_gpu = call.q.device() == Device::CUDA;
    if (on_gpu) check_gpu_limits(call.head_dim(), call.batch() * call.q_heads(), call.k.dim(2));
    const Shape shape = shape_of(call);
    const FlashPlan plan = plan_of(ctx, shape);
    if (ctx.profiler() != nullptr) {  // the cost model, for the profile's FLOP/s and GB/s
      const CostModel cost = cost_model(ctx, shape);
      scope.set_work(cost.flops, static_cast<double>(cost.bytes_with_temporaries()));
    }
    if (plan.path == FlashPath::tiled) {
      profiler::KernelStep step(ctx, kFlashTiledStep);
      if (on_gpu) {
        if constexpr (kCudaBuild) cuda::flash_tiled(ctx, call);
      } else {
        cpu::flash_tiled(ctx, call);
      }
      return;
    }
    Tensor partials =
        Tensor::empty({split_kv_partial_floats(shape, plan.chunks)}, DType::F32, ctx.allocator());
    {
      profiler::KernelStep step(ctx, kFlashPartialsStep);
      if (on_gpu) {
        if constexpr (kCudaBuild) cuda::flash_split_kv_partials(ctx, call, plan, partials);
      } else {
        cpu::flash_split_kv_partials(ctx, call, plan, partials);
      }
    }
    profiler::KernelStep step(ctx, kFlashCombineStep);
    if (on_gpu) {
      if constexpr (kCudaBuild) cuda::flash_split_kv_combine(ctx, call, plan, partials);
    } else {
      cpu::flash_split_kv_combine(ctx, call, plan, partials);
    }
  }
};

}  // namespace

const Backend& flash_backend() {
  static const Flash backend;
  return backend;
}

}  // namespace attnscope::ops::attention
