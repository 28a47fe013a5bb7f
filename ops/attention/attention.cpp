#include "ops/attention/attention.h"

#include <array>

#include "ops/attention/flash_cpu.h"
#include "ops/attention/fused_cpu.h"
#include "ops/attention/inplace_cpu.h"
#include "ops/attention/math_cpu.h"
#include "ops/attention/naive_cpu.h"
#include "ops/check.h"
#include "runtime/error.h"

namespace attnscope::ops::attention {

namespace {

struct Alias {
  std::string_view alias;
  std::string_view name;
};
constexpr std::array kAliases = {Alias{"eager", "naive"}};

// In the order of the study: the baseline, the small change, the library path, the fused ones.
std::vector<const Backend*> registered_backends() {
  return {&naive_cpu_backend(), &inplace_cpu_backend(), &math_cpu_backend(), &fused_cpu_backend(),
          &flash_cpu_backend()};
}

}  // namespace

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
  check(kv_heads > 0 && q_heads % kv_heads == 0, "attention",
        "query heads (" + std::to_string(q_heads) + ") must be a multiple of key/value heads (" +
            std::to_string(kv_heads) + ")");
  check(q.dim(2) <= call.kv_len && call.kv_len <= capacity, "attention",
        "kv_len " + std::to_string(call.kv_len) + " must lie in [q_len " +
            std::to_string(q.dim(2)) + ", cache capacity " + std::to_string(capacity) + "]");
  for (const Tensor* t : {&call.k, &call.v, &call.out}) {
    check(t->dtype() == q.dtype() && t->device() == q.device(), "attention",
          "q, k, v and out must share one dtype and device");
  }
}

const Backend& find_backend(std::string_view name) {
  for (const Alias& a : kAliases) {
    if (a.alias == name) name = a.name;
  }
  for (const Backend* backend : registered_backends()) {
    if (backend->name() == name) return *backend;
  }
  throw Error("--attn", "unknown attention backend '" + std::string(name) +
                            "' (valid: " + backend_list() + ")");
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Backend* backend : registered_backends()) names.emplace_back(backend->name());
  return names;
}

std::string backend_list() {
  std::string list;
  for (const std::string& name : backend_names()) list += (list.empty() ? "" : ", ") + name;
  for (const Alias& a : kAliases) {
    list += ", " + std::string(a.alias) + " (= " + std::string(a.name) + ")";
  }
  return list;
}

}  // namespace attnscope::ops::attention
