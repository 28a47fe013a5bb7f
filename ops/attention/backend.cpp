// The checks every attention backend makes before touching memory, the shape and head layout of
// a call, and the costs every backend shares (FLOPs, bytes moved at least).
#include "ops/attention/backend.h"

#include <string>

#include "ops/check.h"
#include "ops/dispatch.h"
#include "runtime/error.h"

namespace attnscope::ops::attention {

Shape shape_of(const Call& call) {
  Shape shape{call.batch(), call.q_heads(),  call.kv_heads(), call.q_len(),
              call.kv_len,  call.head_dim(), call.q.dtype()};
  shape.bf16_products = call.bf16_products;
  return shape;
}

HeadLayout layout_of(const Call& call) { return {shape_of(call), call.k.dim(2)}; }

CostModel cost_of(const Shape& s, std::size_t temporary_bytes, int steps) {
  // Causal: queries 0..Tq-1 see (kv_len - Tq) past keys each, plus 1..Tq of their own tokens.
  const double q_len = static_cast<double>(s.q_len);
  const double visible_pairs =
      s.causal ? q_len * static_cast<double>(s.kv_len - s.q_len) + q_len * (q_len + 1) / 2
               : q_len * static_cast<double>(s.kv_len);
  const double flops = 4.0 * static_cast<double>(s.heads() * s.head_dim) * visible_pairs;
  const std::size_t bytes = storage_bytes(
      s.dtype, s.batch * s.head_dim * (2 * s.q_heads * s.q_len + 2 * s.kv_heads * s.kv_len));
  return {temporary_bytes, steps, flops, bytes};
}

void validate_call(const Call& call) {
  for (const Tensor* t : {&call.q, &call.k, &call.v, &call.out}) {
    check(t->defined() && t->rank() == 4, "attention", "q, k, v and out must be 4-D tensors");
  }
  const Tensor& q = call.q;
  const std::int64_t batch = q.dim(0);
  const std::int64_t q_heads = q.dim(1);
  const std::int64_t head_dim = q.dim(3);
  const std::int64_t kv_heads = call.k.dim(1);
  const std::int64_t capacity = call.k.dim(2);
  require_shape(call.k, {batch, kv_heads, capacity, head_dim}, "attention", "k");
  require_shape(call.v, call.k.shape(), "attention", "v");
  require_shape(call.out, q.shape(), "attention", "out");
  check(kv_heads > 0 && q_heads % kv_heads == 0, "attention", [&] {
    return "query heads (" + std::to_string(q_heads) + ") must be a multiple of key/value heads (" +
           std::to_string(kv_heads) + ")";
  });
  check(q.dim(2) <= call.kv_len && call.kv_len <= capacity, "attention", [&] {
    return "kv_len " + std::to_string(call.kv_len) + " must lie in [q_len " +
           std::to_string(q.dim(2)) + ", cache capacity " + std::to_string(capacity) + "]";
  });
  for (const Tensor* t : {&call.k, &call.v, &call.out}) {
    check(t->dtype() == q.dtype() && t->device() == q.device(), "attention",
          "q, k, v and out must share one dtype and device");
  }
}

void validate_call(const Context& ctx, const Call& call, const Backend& backend,
                   const char* where) {
  validate_call(call);
  const Device device = call.q.device();
  check(device == ctx.device(), where, [&] {
    return "the tensors are on " + std::string(device_name(device)) + " but the context runs on " +
           std::string(device_name(ctx.device()));
  });
  const Shape shape = shape_of(call);
  const std::string refusal = backend.refusal(ctx, shape);
  check(refusal.empty(), where, refusal);
  if (call.kv_lens.defined()) {
    check(backend.reads_row_lengths(ctx, shape), where, [&] {
      return "per-row key counts (kv_lens) are read only by flash's split-KV path on a GPU, not "
             "by " +
             std::string(backend.name()) + " on " + std::string(device_name(device)) + " at " +
             std::to_string(shape.q_len) + " query rows";
    });
    require_dtype(call.kv_lens, DType::I32, where, "kv_lens");
    require_shape(call.kv_lens, {shape.batch}, where, "kv_lens");
    check(call.kv_lens.device() == device, where, "kv_lens must be on the call's device");
  }
}

std::string dtype_refusal(Device device, DType dtype, bool any_float_on_cpu) {
  if (device == Device::CPU && !any_float_on_cpu) {
    if (dtype == DType::F32) return "";
    return "q must be f32 on the cpu (f16 and bf16 activations run on cuda), got " +
           std::string(dtype_name(dtype));
  }
  if (is_float_dtype(dtype)) return "";
  return "q must be f32, f16 or bf16, got " + std::string(dtype_name(dtype));
}

}  // namespace attnscope::ops::attention
