// The flash backend on a CUDA device (ops/attention/flash_mma.cu, flash_simt.cu, flash_split_kv.cu)
// against float64 attention: its three kernels (tensor-core tiles for f16/bf16 at D = 64 and 128,
// SIMT tiles for everything else, split-KV decode for Tq <= 4), lengths around the 64-row and
// 64-key tiles, new rows against a longer cache, grouped-query heads, batch 2, and its cost model
// (allocator peak, kernel scopes) against measurement.
//
// Inputs are random normal values rounded to the storage dtype; the reference sees the rounded
// values, so the tolerance only covers the kernel's own rounding: f32 1e-5; f16 ten and bf16
// eight units of roundoff (the output is rounded once, and the tensor-core kernel rounds the
// probabilities P to the storage type before P V, as FlashAttention does: a numpy model of these
// numerics, P rounded per 64-key tile, peaks at 5.0 units in f16 and 3.3 in bf16 over 24
// random cases up to T = 1024). Errors are measured against |expected| +
// rms(expected), so that outputs that are small because they average many values (long caches)
// are still compared at their own scale. The unused cache rows [kv_len, capacity) hold NaN and
// the outputs are poisoned with 0xFF bytes (NaN in every dtype): a kernel that reads a row it
// must not, or leaves an output unwritten, fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_checks.h"
#include "ops/attention/registry.h"
#include "profiler/cpu_tracer.h"
#include "reference_ops.h"
#include "runtime/cuda/device.h"
#include "runtime/error.h"
#include "runtime/transfer.h"

using namespace attnscope;
using testing::AttentionCase;
using testing::gpu_missing;

namespace {

const ops::attention::Backend& flash() { return ops::attention::find_backend("flash"); }

// A call on the device and the f32 host copies of its rounded inputs.
struct DeviceCall {
  ops::attention::Call call;
  Tensor q, k, v;  // host, f32, holding exactly the values the device got
};

// Random normal values rounded to `dtype`: the device tensor and its f32 host twin. Cache rows
// [kv_len, capacity) are NaN.
std::pair<Tensor, Tensor> random_input(Context& ctx, const Shape& shape, DType dtype,
                                       std::mt19937& rng, std::int64_t valid_rows) {
  Allocator& host = ctx.host_allocator();
  Tensor values = testing::random_tensor(shape, rng, host);
  const std::int64_t rows = shape[2], width = shape[3];
  for (std::int64_t bh = 0; bh < shape[0] * shape[1]; ++bh) {
    for (std::int64_t r = valid_rows; r < rows; ++r) {
      std::fill_n(values.data<float>() + (bh * rows + r) * width, width, NAN);
    }
  }
  const Tensor stored = values.to_dtype(dtype, host);
  return {to_device(ctx, stored), stored.to_dtype(DType::F32, host)};
}

DeviceCall random_call(Context& ctx, const AttentionCase& c, DType dtype, std::mt19937& rng) {
  DeviceCall d;
  const Shape q_shape = {c.batch, c.q_heads, c.q_len, c.head_dim};
  const Shape kv_shape = {c.batch, c.kv_heads, c.capacity, c.head_dim};
  std::tie(d.call.q, d.q) = random_input(ctx, q_shape, dtype, rng, c.q_len);
  std::tie(d.call.k, d.k) = random_input(ctx, kv_shape, dtype, rng, c.kv_len);
  std::tie(d.call.v, d.v) = random_input(ctx, kv_shape, dtype, rng, c.kv_len);
  d.call.out = testing::poisoned(ctx, q_shape, dtype);
  d.call.kv_len = c.kv_len;
  d.call.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return d;
}

// Largest |actual - expected| / (|expected| + rms(expected)); infinity for a non-finite output.
double attention_error(const Tensor& actual, const std::vector<double>& expected) {
  double square_sum = 0.0;
  for (double e : expected) square_sum += e * e;
  const double rms =
      std::sqrt(square_sum / static_cast<double>(std::max<std::size_t>(1, expected.size())));
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double a = actual.data<float>()[i];
    if (!std::isfinite(a)) return INFINITY;
    worst = std::max(worst, std::fabs(a - expected[i]) / (std::fabs(expected[i]) + rms));
  }
  return worst;
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return 5e-3;  // 10 x 2^-11
    case DType::BF16:
      return 3e-2;  // 8 x 2^-8
    default:
      return 1e-5;
  }
}

// Runs flash on the device and returns its error against float64 attention of the same inputs.
double flash_error(Context& ctx, const DeviceCall& d) {
  flash().attend(ctx, d.call);
  ctx.synchronize();
  const Tensor out = to_host(ctx, d.call.out).to_dtype(DType::F32, ctx.host_allocator());
  return attention_error(out,
                         testing::reference_attention(d.q, d.k, d.v, d.call.kv_len, d.call.scale));
}

// Checks flash against float64 attention on every case in every dtype.
void check_cases(Context& ctx, const std::vector<AttentionCase>& cases, std::mt19937& rng) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    for (const AttentionCase& c : cases) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(c);
      CHECK(flash_error(ctx, random_call(ctx, c, dtype, rng)) < tolerance(dtype));
    }
  }
}

// The same on a fresh context, with inputs drawn from a generator seeded with `seed`.
void check_cases(const std::vector<AttentionCase>& cases, std::uint32_t seed) {
  Context ctx(Device::CUDA, 1);
  std::mt19937 rng(seed);
  check_cases(ctx, cases, rng);
}

// The names of the scopes flash opens directly inside its own scope.
std::vector<std::string> direct_steps(Context& ctx, const ops::attention::Call& call) {
  profiler::CpuTracer tracer;
  ctx.set_profiler(&tracer);
  flash().attend(ctx, call);
  ctx.set_profiler(nullptr);
  ctx.synchronize();
  std::vector<std::string> names;
  for (const profiler::Event& e : tracer.events()) {
    if (e.depth == 1) names.push_back(e.name);
  }
  return names;
}

}  // namespace

TEST_CASE("cuda flash matches float64 attention in prefill at lengths around its tiles") {
  if (gpu_missing()) return;
  // Tq = kv_len; a few unused (NaN) cache rows past the end. D = 64 and 128 take the
  // tensor-core kernel in f16/bf16 and the SIMT kernel in f32; T <= 4 takes split-KV.
  std::vector<AttentionCase> cases;
  for (std::int64_t d : {64, 128}) {
    // t <= 4 takes split-KV: a tiny prompt with no cache before it.
    for (std::int64_t t : {1, 2, 4, 17, 64, 65, 200}) cases.push_back({2, 4, 2, t, t, t + 7, d});
    cases.push_back({1, 2, 1, 1024, 1024, 1030, d});
  }
  check_cases(cases, /*seed=*/21);
}

TEST_CASE(
    "cuda flash matches float64 attention at head dims the tensor-core kernel does not take") {
  if (gpu_missing()) return;
  std::vector<AttentionCase> cases;
  for (std::int64_t d : {16, 32}) {
    for (std::int64_t t : {1, 17, 64, 65, 200}) cases.push_back({2, 4, 2, t, t, t + 3, d});
  }
  // Odd widths, and the largest (its shared memory is above the default 48 KiB).
  for (std::int64_t d : {1, 33, 80, 256}) cases.push_back({1, 2, 1, 70, 90, 95, d});
  check_cases(cases, /*seed=*/22);
}

TEST_CASE("cuda flash matches float64 attention for new rows against a longer cache") {
  if (gpu_missing()) return;
  // Query rows start at kv_len - Tq: the diagonal crosses the key tiles off their boundaries.
  std::vector<AttentionCase> cases;
  for (std::int64_t d : {32, 64, 128}) {
    cases.push_back({2, 4, 2, 5, 300, 310, d});  // the fewest rows of the tiled kernels
    cases.push_back({1, 2, 2, 9, 513, 520, d});
    cases.push_back({2, 2, 1, 70, 1000, 1024, d});  // two query tiles, one of 6 rows
    cases.push_back({1, 4, 1, 130, 200, 256, d});
  }
  check_cases(cases, /*seed=*/23);
}

TEST_CASE("cuda flash decodes with split-KV against short and long caches") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  std::mt19937 rng(24);
  std::vector<AttentionCase> cases;
  for (std::int64_t d : {32, 64, 128}) {
    for (std::int64_t kv_len : {1, 100, 1000, 4096}) {
      cases.push_back({2, 4, 2, 1, kv_len, kv_len + 50, d});
    }
    cases.push_back({2, 4, 2, 3, 777, 800, d});    // a few rows against a longer cache
    cases.push_back({1, 1, 1, 4, 5000, 5000, d});  // the most rows of split-KV, one head
  }
  // One chunk of 98 keys: warp 3 holds only keys 96 and 97, which rows 0 and 1 (positions 94,
  // 95) must not see, so its state for them stays empty (m = -inf) and must get weight 0. Head
  // dims that are not a multiple of 32 (lanes past D idle), and the largest.
  for (std::int64_t d : {1, 80, 256}) cases.push_back({1, 2, 1, 4, 98, 100, d});
  // Several chunks at those head dims (the combine's loop over D and the partials' offsets).
  for (std::int64_t d : {1, 80, 256}) cases.push_back({1, 2, 1, 4, 1000, 1000, d});
  // Many heads, so fewer, longer chunks (64 heads on 132 SMs: 9 chunks of ~455 keys): each warp
  // walks about four 32-key groups, rescaling its state between them; 4:1 grouped-query heads.
  cases.push_back({2, 32, 8, 1, 4096, 4100, 128});
  for (const AttentionCase& c : cases) {
    const DeviceCall d = random_call(ctx, c, DType::F32, rng);
    CAPTURE(c.q_len);
    CAPTURE(c.kv_len);
    CHECK(flash().cost_model(ctx, ops::attention::shape_of(d.call)).steps == 2);
  }
  check_cases(ctx, cases, rng);
}

TEST_CASE("cuda flash allocates exactly the bytes its cost model states and launches its steps") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  std::mt19937 rng(25);
  struct StepCase {
    AttentionCase shape;
    DType dtype;
    std::vector<std::string> steps;
  };
  // The same step names as on the CPU (ops/attention/flash.h): the MMA and SIMT kernels are
  // both the tiled step; the kernel names (CUPTI) tell them apart.
  const std::vector<std::string> mma = {"flash.tiled"};
  const std::vector<std::string> simt = {"flash.tiled"};
  const std::vector<std::string> split = {"flash.split_kv_partials", "flash.split_kv_combine"};
  const std::vector<StepCase> cases = {
      {{8, 16, 16, 1024, 1024, 1024, 64}, DType::BF16, mma},  // the study's shape
      {{2, 4, 2, 130, 130, 140, 128}, DType::F16, mma},
      {{2, 4, 2, 130, 130, 140, 64}, DType::F32, simt},
      {{1, 2, 1, 70, 70, 70, 32}, DType::BF16, simt},
      {{1, 2, 1, 1, 4096, 4096, 64}, DType::BF16, split},
      {{2, 4, 2, 3, 777, 800, 128}, DType::F32, split},
      {{1, 2, 2, 0, 600, 600, 64}, DType::F16, split},  // no query rows: nothing to launch
      {{0, 2, 2, 70, 70, 70, 64}, DType::F16, mma},     // no batch
  };
  for (const StepCase& c : cases) {
    const DeviceCall d = random_call(ctx, c.shape, c.dtype, rng);
    const ops::attention::CostModel model =
        flash().cost_model(ctx, ops::attention::shape_of(d.call));
    const std::size_t before = ctx.allocator().current_bytes();
    ctx.allocator().reset_peak();
    const std::vector<std::string> steps = direct_steps(ctx, d.call);
    CAPTURE(dtype_name(c.dtype));
    CAPTURE(c.shape.batch);
    CAPTURE(c.shape.q_len);
    CAPTURE(c.shape.kv_len);
    CHECK(steps == c.steps);
    CHECK(steps.size() == static_cast<std::size_t>(model.steps));
    CHECK(ctx.allocator().peak_bytes() - before == model.temporary_bytes);
    CHECK(ctx.allocator().current_bytes() == before);
    if (model.steps == 1) {
      CHECK(model.temporary_bytes == 0);
    } else {
      // B Hq chunks Tq (D + 2) floats, a whole number of chunks.
      const std::size_t per_chunk = static_cast<std::size_t>(
          c.shape.batch * c.shape.q_heads * c.shape.q_len * (c.shape.head_dim + 2) * 4);
      if (per_chunk > 0) {
        CHECK(model.temporary_bytes % per_chunk == 0);
      }
    }
  }
  // One head against a long cache is cut into several chunks (up to 4096 / 128 = 32).
  const DeviceCall d = random_call(ctx, {1, 1, 1, 1, 4096, 4096, 64}, DType::F16, rng);
  CHECK(flash().cost_model(ctx, ops::attention::shape_of(d.call)).temporary_bytes >=
        2 * (64 + 2) * 4);
}

TEST_CASE("cuda flash refuses what it cannot serve, with the reason") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  std::mt19937 rng(26);
  const DeviceCall wide = random_call(ctx, {1, 2, 2, 8, 8, 8, 300}, DType::BF16, rng);
  CHECK_THROWS_WITH_AS(flash().attend(ctx, wide.call), doctest::Contains("head dim 300"), Error);

  ops::attention::Call ints = random_call(ctx, {1, 2, 2, 8, 8, 8, 64}, DType::F32, rng).call;
  for (Tensor* t : {&ints.q, &ints.k, &ints.v, &ints.out}) {
    *t = Tensor::empty(t->shape(), DType::I32, ctx.allocator());
  }
  CHECK_THROWS_WITH_AS(flash().attend(ctx, ints), doctest::Contains("f32, f16 or bf16"), Error);
}

TEST_CASE("cuda flash split-KV reads each row's key count from device memory (kv_lens)") {
  if (gpu_missing()) return;
  Context ctx(Device::CUDA, 1);
  std::mt19937 rng(27);
  Allocator& host = ctx.host_allocator();
  // Three rows under one bound of 800 keys, as a replayed decode step has them: the grid and the
  // chunk count are the bound's (6 chunks here), each CTA cuts its own row's keys, so the short
  // rows' chunks are short or empty.
  for (const std::int64_t q_len : {1, 3}) {
    for (const DType dtype : {DType::F32, DType::BF16}) {
      CAPTURE(q_len);
      CAPTURE(dtype_name(dtype));
      const std::vector<std::int32_t> lens = {static_cast<std::int32_t>(q_len), 130, 777};
      const AttentionCase c = {3, 4, 2, q_len, 800, 800, 64};
      DeviceCall d = random_call(ctx, c, dtype, rng);
      // Keys and values past each row's own count are NaN: reading one fails the comparison.
      for (Tensor* cache : {&d.k, &d.v}) {
        for (std::int64_t b = 0; b < c.batch; ++b) {
          for (std::int64_t g = 0; g < c.kv_heads; ++g) {
            float* head = cache->data<float>() + (b * c.kv_heads + g) * c.capacity * c.head_dim;
            std::fill(head + lens[static_cast<std::size_t>(b)] * c.head_dim,
                      head + c.capacity * c.head_dim, NAN);
          }
        }
      }
      d.call.k = to_device(ctx, d.k.to_dtype(dtype, host));
      d.call.v = to_device(ctx, d.v.to_dtype(dtype, host));
      Tensor host_lens = Tensor::empty({c.batch}, DType::I32, host);
      std::copy(lens.begin(), lens.end(), host_lens.data<std::int32_t>());
      d.call.kv_lens = to_device(ctx, host_lens);
      REQUIRE(flash().reads_row_lengths(ctx, ops::attention::shape_of(d.call)));
      flash().attend(ctx, d.call);
      const Tensor out = to_host(ctx, d.call.out).to_dtype(DType::F32, host);
      for (std::int64_t b = 0; b < c.batch; ++b) {
        CAPTURE(b);
        const std::int64_t n = lens[static_cast<std::size_t>(b)];
        const std::vector<double> expected =
            testing::reference_attention(d.q.slice_rows(b, b + 1), d.k.slice_rows(b, b + 1),
                                         d.v.slice_rows(b, b + 1), n, d.call.scale);
        CHECK(attention_error(out.slice_rows(b, b + 1), expected) < tolerance(dtype));
      }
    }
  }
  // The tiled path (70 query rows) reads no per-row counts: refused, not ignored.
  DeviceCall tiled = random_call(ctx, {1, 2, 2, 70, 70, 70, 64}, DType::BF16, rng);
  tiled.call.kv_lens = to_device(ctx, Tensor::zeros({1}, DType::I32, host));
  CHECK_FALSE(flash().reads_row_lengths(ctx, ops::attention::shape_of(tiled.call)));
  CHECK_THROWS_WITH_AS(flash().attend(ctx, tiled.call), doctest::Contains("kv_lens"), Error);
}
