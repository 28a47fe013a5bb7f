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
// device-dispatched steps (steps.h), flash has one implementation per device (flash.h). Their
// device code lives beside this file, in cpu/ and cuda/. A backend that
// cannot serve a call throws Error with the reason: there is no silent fallback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops::attention {

struct PagedCall;    // paged.h: a ragged batch over a paged cache
struct RaggedShape;  // paged.h

struct Call {
  Tensor q;
  Tensor k;
  Tensor v;
  Tensor out;
  std::int64_t kv_len = 0;
  float scale = 1.0f;  // usually 1 / sqrt(D)
  // Optional: i32 [B] on the call's device, row b's own count of valid keys (its queries sit at
  // kv_lens[b] - Tq + i), read by the kernel from device memory; kv_len then only bounds them
  // (each count in [Tq, kv_len], the kernel clamps). A decode step that a CUDA graph replays as
  // the cache grows passes its lengths so (runtime/cuda/step_graph.h): the launch itself stays
  // the same. Only a backend whose reads_row_lengths() says so takes it (flash's split-KV path on
  // a GPU); validate_call refuses it elsewhere.
  Tensor kv_lens;
  // The caller's leave to round the products' operands to bf16: q and k for the scores, the
  // softmax weights p and v for the output; the sums, the softmax and the output stay f32. A model
  // stored in bf16 gives it (its q, k and v are bf16 on the GPU and in PyTorch): flash then
  // multiplies on AMX's bf16 tiles where the cpu has them (cpu/query_tile_amx.h); every other path
  // computes as without it.
  bool bf16_products = false;

  std::int64_t batch() const { return q.dim(0); }
  std::int64_t q_heads() const { return q.dim(1); }
  std::int64_t kv_heads() const { return k.dim(1); }
  std::int64_t q_len() const { return q.dim(2); }
  std::int64_t head_dim() const { return q.dim(3); }
};

// The shape of a call, all that its cost depends on: the cost model and the tools read it, and
// shape_of(call) gives it for a call. Every call the backends serve is causal.
struct Shape {
  std::int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  DType dtype = DType::F32;    // of q, k, v and out
  bool causal = true;          // query i sees keys 0..kv_len - Tq + i (backend.h's top comment)
  bool bf16_products = false;  // Call::bf16_products

  std::int64_t heads() const { return batch * q_heads; }  // (batch, query head) pairs
  std::int64_t score_elements() const { return heads() * q_len * kv_len; }
};

Shape shape_of(const Call& call);

// The steps' view of a call: its shape, and where K and V rows lie. K and V rows of one kv head
// are `capacity` rows apart, so the same steps read the KV cache in place and compact copies of
// it.
struct HeadLayout : Shape {
  std::int64_t capacity = 0;

  // Which (batch, kv head) pair, b * kv_heads + kv head, query head `bh` (= b * q_heads + h) reads.
  std::int64_t kv_index(std::int64_t bh) const {
    const std::int64_t b = bh / q_heads;
    const std::int64_t kv_head = (bh % q_heads) / (q_heads / kv_heads);
    return b * kv_heads + kv_head;
  }
  // Offset of the first K/V row that query head `bh` reads.
  std::int64_t kv_offset(std::int64_t bh) const { return kv_index(bh) * capacity * head_dim; }
};

HeadLayout layout_of(const Call& call);

// The cost of one call: what its backend's header comment promises, as numbers that the tests
// and the profiler check against measurements and that every tool prints.
struct CostModel {
  std::size_t temporary_bytes = 0;  // peak bytes taken from ctx.allocator() during one call
  int steps = 0;  // passes over memory per call, each its own profiler scope directly inside the
                  // backend's scope (on a GPU: kernel launches)
  // The useful work, whatever the backend: 4 D FLOPs (q . k and p v, a multiply and an add each)
  // per visible (query, key) pair, over the B Hq query heads; masked pairs are not counted.
  // Query i sees kv_len - Tq + i + 1 keys, so a square causal call (Tq = Tk = T) does
  // 4 B Hq D T (T + 1) / 2: FlashAttention's causal convention (half of 4 B H T^2 D), up to the
  // T / 2 pairs of the diagonal.
  double flops = 0;
  // The bytes every backend moves at least: q read, the kv_len valid rows of K and V read once
  // per kv head, out written.
  std::size_t bytes = 0;

  // bytes, plus every temporary written once and read once: the least this backend moves.
  std::size_t bytes_with_temporaries() const { return bytes + 2 * temporary_bytes; }
};

// The cost model of a call of `shape` whose backend takes `temporary_bytes` and runs `steps`:
// the FLOPs and bytes every backend shares, computed here once.
CostModel cost_of(const Shape& shape, std::size_t temporary_bytes, int steps);

// How a backend runs a call of a given shape on a given device, in words: what `attnscope
// explain` states before it reads the trace, which then shows what ran.
struct Plan {
  std::string path;    // "eager recipe of 6 steps", "tiled", "split-KV in 2 chunks"
  std::string why;     // why this path for this shape on this device
  std::string engine;  // what computes the steps here (Eigen, cuBLAS, which kernel, the threads)
  // The step scopes the call opens, in order, where the plan names them (flash: its path's
  // steps); empty for the eager recipes, whose steps are their recipe (steps.h).
  std::vector<std::string> steps;
  bool materialises_scores = true;  // whether a [B, Hq, Tq, Tk] score tensor exists at all
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // One line for --help and error messages.
  virtual std::string_view summary() const = 0;
  // Computes call.out on the device of the call's tensors. Throws Error when the backend cannot
  // serve the call.
  virtual void attend(Context& ctx, const Call& call) const = 0;
  // The cost of attend(ctx, call) for any call of `shape`, from the backend's formulas (the one
  // place they are stated). `ctx` gives the device and threads, which decide flash's plan.
  virtual CostModel cost_model(const Context& ctx, const Shape& shape) const = 0;
  // Why this backend cannot serve a call of `shape` on ctx's device, "" when it can: a dtype it
  // does not take there, a head dim or a size its kernels are not built for. attend() refuses
  // with this reason (validate_call); `attnscope explain` lists it without running anything.
  virtual std::string refusal(const Context& ctx, const Shape& shape) const = 0;
  // How attend(ctx, call) runs a call of `shape` (Plan above).
  virtual Plan plan(const Context& ctx, const Shape& shape) const = 0;
  // Whether attend() reads each row's key count from Call::kv_lens for a call of `shape` on
  // ctx's device (kv_len then bounding them). Only flash's split-KV path on a GPU does.
  virtual bool reads_row_lengths(const Context& /*ctx*/, const Shape& /*shape*/) const {
    return false;
  }
  // Computes call.out for a ragged batch over a paged KV cache (paged.h), on the device of the
  // call's tensors: the eager backends gather each sequence into a contiguous call
  // (attend_gathered), flash reads the blocks where they lie. Throws Error as attend does.
  virtual void attend_paged(Context& ctx, const PagedCall& call) const = 0;
  // The cost of attend_paged for a call of `shape`; its steps count every kernel step the call
  // runs (the gathered backends' own steps sit inside their per-sequence scopes).
  virtual CostModel paged_cost_model(const Context& ctx, const RaggedShape& shape) const = 0;
};

// Throws Error unless the tensors of `call` have consistent shapes, dtypes and devices.
void validate_call(const Call& call);
// validate_call, plus what every backend needs: the tensors live on the context's device,
// `backend` does not refuse the call's shape there (Backend::refusal), and kv_lens, when given,
// is i32 [B] there and read by the backend (Backend::reads_row_lengths). Throws Error naming
// `where` otherwise.
void validate_call(const Context& ctx, const Call& call, const Backend& backend, const char* where);
// The dtype rule of every backend, for Backend::refusal: q, k, v and out in f32 on the cpu
// (any float dtype when `any_float_on_cpu`), in f32, f16 or bf16 on cuda. "" when `dtype`
// passes on `device`, else the reason.
std::string dtype_refusal(Device device, DType dtype, bool any_float_on_cpu);

// The five backends, one file each (naive.cpp, inplace.cpp, math.cpp, fused.cpp, flash.cpp), in
// the order of the study; registry.cpp puts them behind their names.
const Backend& naive_backend();
const Backend& inplace_backend();
const Backend& math_backend();
const Backend& fused_backend();
const Backend& flash_backend();

}  // namespace attnscope::ops::attention
