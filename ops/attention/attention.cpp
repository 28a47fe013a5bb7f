#include "ops/attention/attention.h"

#include <array>

#include "ops/attention/flash_cpu.h"
#include "ops/attention/flash_cuda.h"
#include "ops/attention/fused_cpu.h"
#include "ops/attention/fused_cuda.h"
#include "ops/attention/inplace_cpu.h"
#include "ops/attention/inplace_cuda.h"
#include "ops/attention/math_cpu.h"
#include "ops/attention/math_cuda.h"
#include "ops/attention/naive_cpu.h"
#include "ops/attention/naive_cuda.h"
#include "ops/check.h"
#include "runtime/error.h"

namespace attnscope::ops::attention {

namespace {

struct Alias {
  std::string_view alias;
  std::string_view name;
};
constexpr std::array kAliases = {Alias{"eager", "naive"}};

// One name, one implementation per device: forward() and cost_model() go to the one for the
// device of the call's tensors (of the context, for the cost model). Both implement the same
// semantics and the same cost model formulas; only what a "step" is differs (a CPU pass, a GPU
// kernel launch).
class PerDevice final : public Backend {
 public:
  PerDevice(const Backend& cpu, const Backend* cuda) : cpu_(cpu), cuda_(cuda) {}
  std::string_view name() const override { return cpu_.name(); }
  std::string_view summary() const override { return cpu_.summary(); }
  void forward(Context& ctx, const Call& call) const override {
    for_device(call.q.device()).forward(ctx, call);
  }
  CostModel cost_model(const Context& ctx, const Call& call) const override {
    return for_device(ctx.device()).cost_model(ctx, call);
  }

 private:
  const Backend& for_device(Device device) const {
    if (device == Device::CPU) return cpu_;
    check(cuda_ != nullptr, "attention " + std::string(name()), "this build has no CUDA path");
    return *cuda_;
  }
  const Backend& cpu_;
  const Backend* cuda_;
};

// The CUDA implementations, or none in a build without the CUDA path.
std::array<const Backend*, 5> cuda_backends() {
  if constexpr (kCudaBuild) {
    return {&naive_cuda_backend(), &inplace_cuda_backend(), &math_cuda_backend(),
            &fused_cuda_backend(), &flash_cuda_backend()};
  } else {
    return {};
  }
}

// In the order of the study: the baseline, the small change, the library path, the fused ones.
const std::vector<const Backend*>& registered_backends() {
  static const std::array<const Backend*, 5> cuda = cuda_backends();
  static const std::array<PerDevice, 5> backends = {
      PerDevice(naive_cpu_backend(), cuda[0]), PerDevice(inplace_cpu_backend(), cuda[1]),
      PerDevice(math_cpu_backend(), cuda[2]), PerDevice(fused_cpu_backend(), cuda[3]),
      PerDevice(flash_cpu_backend(), cuda[4])};
  static const std::vector<const Backend*> list = {&backends[0], &backends[1], &backends[2],
                                                   &backends[3], &backends[4]};
  return list;
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
