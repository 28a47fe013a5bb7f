// The GPU steps the eager CUDA backends (naive, inplace, math, fused) share: each one is one
// launch on the context's stream (a cuBLAS call or one kernel), never a synchronisation, so a
// whole attention call can be captured into a CUDA graph. The backends open one profiler scope
// per step, exactly as their CPU twins do around the steps of cpu_steps.h.
//
//   qk_gemm:     scores[b, h] = q[b, h] k[b, h / group]^T     [Tq, Tk], 2 Tq Tk D FLOPs per head
//   pv_gemm:     out[b, h]    = probs[b, h] v[b, h / group]   [Tq, D],  2 Tq Tk D FLOPs per head
//   scale:       out[i] = in[i] * factor over n elements (out may be in)
//   copy:        out[i] = in[i] over n elements
//   causal_fill: scores[b, h, i, j] = value for every key j after query i's position
//   softmax:     row-wise softmax of [rows, width]; nan_safe gives zeros for all -inf rows
//
// Tensors hold f32, f16 or bf16 (all of one call share the dtype); arithmetic is f32 (cuBLAS
// accumulates in f32, kernels widen on load and round on store).
//
// Grouped-query attention in one cuBLAS call: the query heads of one kv head are consecutive in
// q ([B, Hq, Tq, D] with Hq = Hkv * group), so for each (batch, kv head) they form one
// [group * Tq, D] row-major matrix, and their scores one [group * Tq, Tk] matrix. A single
// strided-batched GEMM with batch B * Hkv covers the call; row r of a block is query r % Tq.
// K and V rows of one kv head are `capacity` rows apart, so the GEMMs read the KV cache in place
// (only its kv_len valid rows) as well as compact copies of it.
//
// Only for files compiled by nvcc (it needs the CUDA headers through cuda_context.h).
#pragma once

#include <cstdint>

#include "ops/attention/attention.h"
#include "ops/attention/cpu_steps.h"

namespace attnscope::ops::attention::gpu {

// validate_call, plus: the tensors live on the GPU of the CUDA context `ctx` and hold f32, f16
// or bf16. Throws Error naming `op` otherwise.
void validate_gpu_call(const Context& ctx, const Call& call, const char* op);

// scores = q k^T for every (batch, query head): q [B, Hq, Tq, D], k read as `layout` says,
// scores [B, Hq, Tq, kv_len], all of one dtype.
void qk_gemm(const Context& ctx, const HeadLayout& layout, const Tensor& q, const Tensor& k,
             Tensor& scores);
// out = probs v for every (batch, query head): probs [B, Hq, Tq, kv_len], v read as `layout`
// says, out [B, Hq, Tq, D], all of one dtype.
void pv_gemm(const Context& ctx, const HeadLayout& layout, const Tensor& probs, const Tensor& v,
             Tensor& out);

// out = in * factor, elementwise; in and out have one dtype and numel and may be one tensor.
void scale(const Context& ctx, const Tensor& in, Tensor& out, float factor);
// out = in, elementwise (a real copy kernel, as an eager framework's clone).
void copy(const Context& ctx, const Tensor& in, Tensor& out);
// Writes `value` over the masked part of every row of scores [B, Hq, Tq, kv_len], in place:
// keys j > kv_len - Tq + i of query i. Reads nothing.
void causal_fill(const Context& ctx, const HeadLayout& layout, Tensor& scores, float value);
// Softmax over the last dimension of `in` into `out` (same shape and dtype; may be one tensor).
// A row whose entries are all -inf gives NaN (as eager frameworks do), or zeros when nan_safe.
void softmax(const Context& ctx, const Tensor& in, Tensor& out, bool nan_safe);

// Threads per block for a kernel that gives one block to each row of `width` elements: a warp
// for short rows, up to 256 threads for long ones.
int row_block_threads(std::int64_t width);
// Blocks for a grid-stride loop over n elements with `threads` per block (at least 1, capped
// so that the grid stays within CUDA's limits; the loop covers the rest).
unsigned int grid_stride_blocks(std::int64_t n, int threads);

}  // namespace attnscope::ops::attention::gpu
