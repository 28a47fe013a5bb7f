// The GEMM-based attention backends on a CUDA device (naive, inplace, math, fused) against
// float64 attention computed on the CPU, in f32, f16 and bf16, on prefill and decode shapes with
// batch 2, grouped-query heads, D in {16, 32, 64, 128} and lengths that are multiples of
// nothing. Each call also checks the backend's cost model against measurement: the device
// allocator's peak during the call equals temporary_bytes, and the call opens exactly `steps`
// scopes of category "kernel", all directly inside its own "attention.<name>" scope.
// The cache rows after kv_len hold NaN and the output is poisoned (all bits set: NaN in every
// float dtype) before each call, so reading an unused row or leaving an output unwritten fails.
// Every test skips, saying why, when no GPU is usable.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_checks.h"
#include "ops/attention/registry.h"
#include "reference_ops.h"
#include "runtime/cuda/device.h"
#include "runtime/error.h"
#include "runtime/transfer.h"

using namespace attnscope;
using testing::AttentionCase;
using testing::gpu_missing;

namespace {

const std::vector<AttentionCase> kCases = {
    {2, 4, 2, 37, 37, 37, 64},      // prefill, grouped-query heads, a full cache
    {2, 4, 4, 33, 33, 45, 16},      // prefill into a larger cache
    {2, 8, 2, 1, 300, 317, 128},    // decode against a long cache, 4 query heads per kv head
    {2, 2, 2, 1, 1, 5, 32},         // decode of the very first token
    {1, 6, 3, 7, 130, 140, 64},     // a few new tokens against a cache
    {2, 2, 1, 129, 129, 160, 128},  // a longer prefill, D = 128
};

// Records every scope with its category and nesting depth (0 = outermost).
class RecordingSink final : public ScopeSink {
 public:
  struct Record {
    std::string name;
    std::string category;
    int depth = 0;
  };

  void begin_scope(const char* name, const char* category) override {
    records.push_back({name, category, depth_});
    ++depth_;
  }
  void end_scope() override { --depth_; }

  std::vector<Record> records;

 private:
  int depth_ = 0;
};

// A host tensor of normal(0, 1) values rounded to `dtype`; in a [B, H, rows, D] cache the rows
// from `valid_rows` on are NaN.
Tensor random_host(const Shape& shape, DType dtype, std::int64_t valid_rows, std::mt19937& rng,
                   Allocator& host) {
  Tensor t = testing::random_tensor(shape, rng, host);
  const std::int64_t rows = shape[2], d = shape[3];
  float* data = t.data<float>();
  for (std::int64_t head = 0; head < shape[0] * shape[1]; ++head) {
    std::fill(data + (head * rows + valid_rows) * d, data + (head + 1) * rows * d, NAN);
  }
  return t.to_dtype(dtype, host);
}

// Largest |actual - expected| / max(|expected|, 1); infinite when an output is not finite.
double worst_error(const Tensor& actual_f32, const std::vector<double>& expected) {
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double a = actual_f32.data<float>()[i];
    if (!std::isfinite(a)) return INFINITY;
    worst = std::max(worst, std::fabs(a - expected[i]) / std::max(std::fabs(expected[i]), 1.0));
  }
  return worst;
}

// What a backend may lose against float64. f32: the GEMMs' rounding. math converts to f32 and
// rounds once at the end: one unit roundoff u of the dtype (2^-8 bf16, 2^-11 f16). The eager
// backends hold scores, scaled scores and probabilities in the dtype too: a few u.
double tolerance(const std::string& backend, DType dtype) {
  if (dtype == DType::F32) return 2e-5;
  const double u = dtype == DType::BF16 ? 0x1.0p-8 : 0x1.0p-11;
  return backend == "math" ? u + 1e-5 : 8 * u;
}

struct Measured {
  std::size_t temporary_bytes = 0;
  std::vector<RecordingSink::Record> scopes;
};

// Runs one call with a recording sink; the peak of the device allocator above what was live
// before the call is its temporaries.
Measured run(const ops::attention::Backend& backend, Context& ctx,
             const ops::attention::Call& call) {
  RecordingSink sink;
  ctx.synchronize();
  const std::size_t before = ctx.allocator().current_bytes();
  ctx.allocator().reset_peak();
  ctx.set_profiler(&sink);
  try {
    backend.attend(ctx, call);
  } catch (...) {
    ctx.set_profiler(nullptr);
    throw;
  }
  ctx.set_profiler(nullptr);
  ctx.synchronize();  // asynchronous kernel failures surface here
  return {ctx.allocator().peak_bytes() - before, sink.records};
}

// Runs backend `name` on every case in every dtype and checks its result and cost model.
void check_backend(const std::string& name) {
  Context ctx(Device::CUDA, 1);
  Allocator& host = ctx.host_allocator();
  const ops::attention::Backend& backend = ops::attention::find_backend(name);
  std::mt19937 rng(21);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    for (const AttentionCase& c : kCases) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(c);
      const Shape q_shape = {c.batch, c.q_heads, c.q_len, c.head_dim};
      const Shape kv_shape = {c.batch, c.kv_heads, c.capacity, c.head_dim};
      const Tensor q = random_host(q_shape, dtype, c.q_len, rng, host);
      const Tensor k = random_host(kv_shape, dtype, c.kv_len, rng, host);
      const Tensor v = random_host(kv_shape, dtype, c.kv_len, rng, host);
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
      // The reference sees exactly the values the GPU gets (already rounded to the dtype).
      const std::vector<double> expected =
          testing::reference_attention(q.to_dtype(DType::F32, host), k.to_dtype(DType::F32, host),
                                       v.to_dtype(DType::F32, host), c.kv_len, scale);

      ops::attention::Call call;
      call.q = to_device(ctx, q);
      call.k = to_device(ctx, k);
      call.v = to_device(ctx, v);
      call.out = testing::poisoned(ctx, q_shape, dtype);
      call.kv_len = c.kv_len;
      call.scale = static_cast<float>(scale);

      const Measured measured = run(backend, ctx, call);
      const ops::attention::CostModel model =
          backend.cost_model(ctx, ops::attention::shape_of(call));

      const Tensor out = to_host(ctx, call.out).to_dtype(DType::F32, host);
      CHECK(worst_error(out, expected) <= tolerance(name, dtype));

      CHECK(measured.temporary_bytes == model.temporary_bytes);
      REQUIRE(!measured.scopes.empty());
      CHECK(measured.scopes.front().name == "attention." + name);
      CHECK(measured.scopes.front().depth == 0);
      int kernel_scopes = 0;
      int direct_children = 0;
      for (const RecordingSink::Record& r : measured.scopes) {
        kernel_scopes += r.category == "kernel" ? 1 : 0;
        if (r.depth == 1) {
          ++direct_children;
          CHECK_MESSAGE(r.category == "kernel", r.name);
        }
        CHECK_MESSAGE(r.depth <= 1, r.name);  // a step is one launch: nothing nests in it
      }
      CHECK(kernel_scopes == model.steps);
      CHECK(direct_children == model.steps);
    }
  }
}

}  // namespace

TEST_CASE("naive on the GPU matches float64 attention and its cost model") {
  if (gpu_missing()) return;
  check_backend("naive");
}

TEST_CASE("inplace on the GPU matches float64 attention and its cost model") {
  if (gpu_missing()) return;
  check_backend("inplace");
}

TEST_CASE("math on the GPU matches float64 attention and its cost model") {
  if (gpu_missing()) return;
  check_backend("math");
}

TEST_CASE("fused on the GPU matches float64 attention and its cost model") {
  if (gpu_missing()) return;
  check_backend("fused");
}

TEST_CASE("at the study's shape in bf16 the GPU cost models are the CPU formulas in bf16 bytes") {
  if (gpu_missing()) return;
  // B=8, H=16, T=1024, D=64: shapes only, nothing is allocated or run.
  Context ctx(Device::CUDA, 1);
  ops::attention::Call call;
  call.q = Tensor::borrow(nullptr, {8, 16, 1024, 64}, DType::BF16, Device::CUDA, nullptr);
  call.k = call.q;
  call.v = call.q;
  call.out = call.q;
  call.kv_len = 1024;
  const std::size_t scores = 8ull * 16 * 1024 * 1024;  // score elements
  const std::size_t q_elements = 8ull * 16 * 1024 * 64;
  struct Expected {
    const char* name;
    std::size_t bytes;
    int steps;
  };
  const Expected expected[] = {
      {"naive", 4 * scores * 2, 6},
      {"inplace", 3 * scores * 2, 5},
      {"math", 4 * (2 * q_elements + 2 * q_elements + 3 * scores) + 1024 * 1024, 11},
      {"fused", scores * 2, 3},
  };
  for (const Expected& e : expected) {
    const ops::attention::CostModel model =
        ops::attention::find_backend(e.name).cost_model(ctx, ops::attention::shape_of(call));
    MESSAGE(e.name << ": " << model.steps << " launches, "
                   << static_cast<double>(model.temporary_bytes) / (1 << 20)
                   << " MiB of temporaries");
    CAPTURE(e.name);
    CHECK(model.temporary_bytes == e.bytes);
    CHECK(model.steps == e.steps);
  }
}

TEST_CASE("the GPU attention backends refuse integer tensors") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  ops::attention::Call call;
  call.q = Tensor::empty({1, 1, 2, 16}, DType::I32, ctx.allocator());
  call.k = call.q;
  call.v = call.q;
  call.out = Tensor::empty({1, 1, 2, 16}, DType::I32, ctx.allocator());
  call.kv_len = 2;
  for (const char* name : {"naive", "inplace", "math", "fused"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(ops::attention::find_backend(name).attend(ctx, call),
                         doctest::Contains("f32, f16 or bf16"), Error);
  }
}
