// The attention interface: one call shape for every backend, the cost model each one promises,
// and the Backend every `--attn` name stands for (registry.h finds one by name).
//
// A call is causal self-attention of Tq new query tokens against a key/value cache that already
// holds their own keys and values:
//
//   q    [B, Hq,  Tq, D]    the new tokens' queries
//   k, v [B, Hkv, S,  D]    the cache; positions [0, kv_len) are valid, S >= kv_len
//   out  [B, Hq,  Tq, D]
//
// Query i sits at absolute position p_i = kv_len - Tq + i and attends to keys 0..p_i:
//
//   out[b, h, i, :] = sum_{j <= p_i} softmax_j(scale q_i . k_j) v_j,   k, v of kv head h / (Hq/Hkv)
//
// Prefill is the case kv_len == Tq (an empty cache before the call); decode is Tq = 1 (or a few
// tokens) against a longer cache. Hkv may divide Hq (grouped-query attention).
//
// A backend runs on whichever device the call's tensors live on: the eager ones are recipes of
// device-dispatched steps (steps.h), flash has one implementation per device. A backend that
// cannot serve a call throws Error with the reason: there is no silent fallback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops::attention {

struct Call {
  Tensor q;
  Tensor k;
  Tensor v;
  Tensor out;
  std::int64_t kv_len = 0;
  float scale = 1.0f;  // usually 1 / sqrt(D)

  std::int64_t batch() const { return q.dim(0); }
  std::int64_t q_heads() const { return q.dim(1); }
  std::int64_t kv_heads() const { return k.dim(1); }
  std::int64_t q_len() const { return q.dim(2); }
  std::int64_t head_dim() const { return q.dim(3); }
};

// The sizes of a call that the steps iterate over. K and V rows of one kv head are `capacity`
// rows apart, so the same steps read the KV cache in place and compact copies of it.
struct HeadLayout {
  std::int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, capacity = 0,
               head_dim = 0;

  std::int64_t heads() const { return batch * q_heads; }  // (batch, query head) pairs
  std::int64_t score_elements() const { return heads() * q_len * kv_len; }
  // Offset of the first K/V row that query head `bh` (= b * q_heads + h) reads.
  std::int64_t kv_offset(std::int64_t bh) const {
    const std::int64_t b = bh / q_heads;
    const std::int64_t kv_head = (bh % q_heads) / (q_heads / kv_heads);
    return (b * kv_heads + kv_head) * capacity * head_dim;
  }
};

HeadLayout layout_of(const Call& call);

// The useful work of a call of this shape, whatever the backend: 4 D FLOPs (q . k and p v, a
// multiply and an add each) per visible (query, key) pair, over batch x heads query heads. Query
// i sees kv_len - Tq + i + 1 keys; masked pairs are not counted.
double useful_flops(std::int64_t batch, std::int64_t heads, std::int64_t head_dim,
                    std::int64_t q_len, std::int64_t kv_len);

// What a backend's header comment promises, as numbers that tests and the profiler check
// against measurements.
struct CostModel {
  std::size_t temporary_bytes = 0;  // peak bytes taken from ctx.allocator() during one call
  int steps = 0;  // passes over memory per call, each its own profiler scope directly inside the
                  // backend's scope (on a GPU: kernel launches)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // One line for --help and error messages.
  virtual std::string_view summary() const = 0;
  // Computes call.out on the device of the call's tensors. Throws Error when the backend cannot
  // serve the call.
  virtual void forward(Context& ctx, const Call& call) const = 0;
  // The cost of forward(ctx, call), from the backend's formulas (the one place they are stated).
  virtual CostModel cost_model(const Context& ctx, const Call& call) const = 0;
};

// Throws Error unless the tensors of `call` have consistent shapes, dtypes and devices.
void validate_call(const Call& call);
// validate_call, plus what every backend needs: the tensors live on the context's device and
// hold a float dtype that `backend` takes there (f32 on the cpu unless `any_float_on_cpu`; f32,
// f16 or bf16 on cuda). Throws Error naming `backend` otherwise.
void validate_call(const Context& ctx, const Call& call, const char* backend,
                   bool any_float_on_cpu = false);

// The five backends, one file each (naive.cpp, inplace.cpp, math.cpp, fused.cpp, flash.cpp), in
// the order of the study; registry.cpp puts them behind their names.
const Backend& naive_backend();
const Backend& inplace_backend();
const Backend& math_backend();
const Backend& fused_backend();
const Backend& flash_backend();

}  // namespace attnscope::ops::attention
