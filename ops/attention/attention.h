// The attention interface: one call shape for every backend, and the registry behind --attn.
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
// Backends register under a name; `eager` is an alias of `naive`. A backend that cannot serve a
// call throws Error with the reason: there is no silent fallback to another backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
  // Computes call.out. Throws Error when the backend cannot serve the call.
  virtual void forward(Context& ctx, const Call& call) const = 0;
  // The cost of forward(ctx, call), from the backend's formulas.
  virtual CostModel cost_model(const Context& ctx, const Call& call) const = 0;
};

// Throws Error unless the tensors of `call` have consistent shapes, dtypes and devices.
void validate_call(const Call& call);

// The backend registered under `name` (or an alias). An unknown name throws Error listing the
// valid ones.
const Backend& find_backend(std::string_view name);
// Registered names, in the order a user should read them.
std::vector<std::string> backend_names();
// "naive, inplace, ..." for help texts.
std::string backend_list();

}  // namespace attnscope::ops::attention
