// The eager attention steps' bodies on a GPU (cuda/steps.cu, one launch each on the context's
// stream), called by ops/attention/steps.cpp after its checks; ops/attention/steps.h states what
// each step computes. Softmax, safe_softmax and convert are the cuda bodies of ops/softmax.h and
// ops/cast.h. Declared in every build, defined in a CUDA build only (ops/dispatch.h says why a
// CPU-only build never calls them).
#pragma once

#include "ops/attention/backend.h"
#include "runtime/tensor.h"

namespace attnscope::ops::attention::cuda {

void qk_gemm(Context& ctx, const HeadLayout& layout, const Tensor& q, const Tensor& k,
             Tensor& scores);
void pv_gemm(Context& ctx, const HeadLayout& layout, const Tensor& probs, const Tensor& v,
             Tensor& out);
void scale(Context& ctx, const Tensor& in, Tensor& out, float factor);
void copy(Context& ctx, const Tensor& in, Tensor& out);
void causal_fill(Context& ctx, const HeadLayout& layout, Tensor& scores, float value);
void scale_mask_softmax(Context& ctx, const HeadLayout& layout, Tensor& scores, float factor);
void upcast_cache_rows(Context& ctx, const HeadLayout& layout, const Tensor& cache, Tensor& out);
void build_causal_mask(Context& ctx, const HeadLayout& layout, Buffer& keep);
void where(Context& ctx, const Buffer& keep, const Tensor& scores, Tensor& masked);

}  // namespace attnscope::ops::attention::cuda
