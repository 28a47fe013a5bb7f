// AttentionTap: a tool's view of every attention call of a model step, without the model or the
// backends knowing the tool (as ScopeSink is the profiler's view, runtime/context.h).
//
// A tool derives from it and attaches itself with Context::set_attention_tap; with none attached
// (the default) each call site costs one pointer test. Three places call it, in this order within
// one layer of LanguageModel::forward (the contiguous KV cache; the engine's forward_paged calls
// only `probabilities`, from the eager backends' gathered calls, and `layer_output`):
//
//   probabilities  inside an eager backend (naive, inplace, math, fused), from its pv_gemm step:
//                  the softmax probabilities P [B, Hq, Tq, kv_len] it is about to multiply by V,
//                  on the call's device, in the dtype the backend computes them in. Flash never
//                  materialises them, so a flash call has none. Keep the handle (it keeps the
//                  buffer alive) rather than reading it here: this runs inside the backend's
//                  profiler scope, and whatever the tool does would be counted as attention.
//   attention      after the backend returned (models/language_model.cpp, LanguageModel::attend):
//                  the call's tensors (Call below). The tool may change `out` in place: the
//                  model carries on with what it holds then.
//   layer_output   after each layer's MLP block: the residual stream hidden [N, C] (N = B Tq
//                  token rows), for a logit lens (LanguageModel::logits_of_hidden).
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope {

class AttentionTap {
 public:
  // One layer's attention call, after the backend ran: q [B, Hq, Tq, D] against the layer's
  // cache k and v [B, Hkv, S, D] whose first kv_len rows are valid (query i sits at position
  // kv_len - Tq + i), and the backend's output out [B, Hq, Tq, D].
  struct Call {
    std::int64_t layer = 0;
    const Tensor& q;
    const Tensor& k;
    const Tensor& v;
    std::int64_t kv_len = 0;
    float scale = 1.0f;
    Tensor& out;
  };

  virtual ~AttentionTap() = default;
  virtual void probabilities(Context& /*ctx*/, const Tensor& /*probs*/) {}
  virtual void attention(Context& /*ctx*/, const Call& /*call*/) {}
  virtual void layer_output(Context& /*ctx*/, std::int64_t /*layer*/, const Tensor& /*hidden*/) {}
};

}  // namespace attnscope
