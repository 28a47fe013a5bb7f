// Every CUDA op against the CPU op (or a float64 reference) on random inputs: f32 tight, f16 and
// bf16 within their rounding; device outputs are filled with 0xFF bytes (NaN) before each run,
// so an element a kernel never writes fails the comparison. Each GPU test skips with
// "SKIPPED: <why>" when no CUDA device is usable; the first two tests need no GPU at all.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cuda_checks.h"
#include "ops/activation.h"
#include "ops/cast.h"
#include "ops/embedding.h"
#include "ops/head_rms_norm.h"
#include "ops/heads.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/rotary_embedding.h"
#include "ops/sample.h"
#include "ops/softmax.h"
#include "ops/swiglu.h"
#include "reference_ops.h"
#include "runtime/context.h"
#include "runtime/cuda/caching_allocator.h"
#include "runtime/cuda/cublas_library.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/step_graph.h"
#include "runtime/error.h"
#include "runtime/sampler.h"
#include "runtime/transfer.h"

using namespace attnscope;
using testing::gpu_missing;
using testing::poisoned;
using testing::random_tensor;

namespace {

constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

// Largest relative error a result stored in `dtype` may show against an f32/f64 reference
// computed from the same (rounded) inputs: f32 differences in the order of operations, or the
// final rounding to f16 (2^-11) / bf16 (2^-8), with a margin.
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return 1e-3;
    case DType::BF16:
      return 8e-3;
    default:
      return 1e-5;
  }
}

// Largest |actual - expected| / max(|expected|, floor). Infinity when actual is NaN where the
// reference is not (an element the kernel never wrote, or a wrong result); NaN where the
// reference is NaN too counts as equal.
double worst_error(const Tensor& actual, const std::vector<double>& expected, double floor) {
  REQUIRE(static_cast<std::size_t>(actual.numel()) == expected.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double a = actual.data<float>()[i];
    if (std::isnan(a) || std::isnan(expected[i])) {
      if (std::isnan(a) != std::isnan(expected[i])) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isinf(a) || std::isinf(expected[i])) {
      if (a != expected[i]) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, std::fabs(a - expected[i]) / std::max(std::fabs(expected[i]), floor));
  }
  return worst;
}

// The values a `dtype` tensor made from host f32 `t` holds, as host f32.
Tensor rounded(Context& host, const Tensor& t, DType dtype) {
  return t.to_dtype(dtype, host.allocator()).to_dtype(DType::F32, host.allocator());
}

// Host f32 `t` converted to `dtype` on the gpu.
Tensor upload(Context& gpu, const Tensor& t, DType dtype) {
  return to_device(gpu, t.to_dtype(dtype, gpu.host_allocator()));
}

// A gpu tensor of `value` in every element: a finite poison, for outputs whose expected values
// include NaN (an unwritten NaN-poisoned element would look right there).
Tensor filled(Context& gpu, const Shape& shape, DType dtype, float value) {
  Tensor host = Tensor::empty(shape, DType::F32, gpu.host_allocator());
  std::fill_n(host.data<float>(), host.numel(), value);
  return upload(gpu, host, dtype);
}

// A gpu tensor back on the host, as f32.
Tensor download(Context& gpu, const Tensor& t) {
  const Tensor host = to_host(gpu, t);
  return host.dtype() == DType::F32 ? host : host.to_dtype(DType::F32, gpu.host_allocator());
}

// worst_error (floor 1) of a gpu result against the host f32 result it should equal.
double device_error(Context& gpu, const Tensor& device_actual, const Tensor& host_expected) {
  return worst_error(download(gpu, device_actual), testing::to_double(host_expected), 1.0);
}

Tensor host_i32(Context& host, const std::vector<std::int32_t>& values) {
  Tensor t =
      Tensor::empty({static_cast<std::int64_t>(values.size())}, DType::I32, host.allocator());
  std::copy(values.begin(), values.end(), t.data<std::int32_t>());
  return t;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Without a GPU
// ---------------------------------------------------------------------------------------------

TEST_CASE("cpu work never needs a gpu; a cuda context without one says --device cuda") {
  Context cpu(1);
  std::mt19937 rng(1);
  Tensor a = random_tensor({3, 5}, rng, cpu.allocator());
  Tensor narrow = Tensor::empty({3, 5}, DType::BF16, cpu.allocator());
  ops::cast(cpu, a, narrow);
  CHECK(narrow.data<std::uint16_t>()[2] == f32_to_bf16(a.data<float>()[2]));
  CHECK_THROWS_WITH_AS(ops::activation(cpu, Activation::GeluTanh, narrow, narrow),
                       doctest::Contains("must be f32"), Error);

  if (gpu::unavailable_reason().empty()) {
    MESSAGE("a GPU is present: the no-GPU error of Context(Device::CUDA) is not exercised");
    return;
  }
  try {
    Context gpu(Device::CUDA, 1);
    FAIL("Context(Device::CUDA) succeeded without a usable GPU");
  } catch (const Error& e) {
    CAPTURE(e.what());
    CHECK(std::string(e.what()).rfind("--device cuda", 0) == 0);
  }
}

TEST_CASE(
    "the device allocator's size classes: little slack, few classes for growing temporaries") {
  // Host arithmetic only: no GPU needed.
  using gpu::CachingAllocator;
  CHECK(CachingAllocator::size_class(0) == 512);
  CHECK(CachingAllocator::size_class(1) == 512);
  CHECK(CachingAllocator::size_class(4096) == 4096);
  CHECK(CachingAllocator::size_class(4097) == 4608);  // 4096 + 4096 / 8
  CHECK(CachingAllocator::size_class(std::size_t{1} << 30) == std::size_t{1} << 30);
  std::size_t previous = 0;
  for (std::size_t bytes = 1; bytes < (std::size_t{1} << 24); bytes = bytes * 9 / 8 + 1) {
    const std::size_t rounded = CachingAllocator::size_class(bytes);
    CAPTURE(bytes);
    CHECK(rounded >= bytes);
    CHECK(rounded <= bytes + std::max<std::size_t>(512, bytes / 8));  // at most 12.5% of slack
    CHECK(rounded % 512 == 0);
    CHECK(rounded >= previous);
    previous = rounded;
  }
  // B = 8, H = 16, f32 scores of one query row: 512 bytes more per cached token. Over 2048
  // decode steps (up to 1 MiB) the scores take 72 classes, 8 up to 4 KiB and 8 per doubling
  // above, not 2048.
  std::vector<std::size_t> classes;
  for (std::size_t tokens = 1; tokens <= 2048; ++tokens) {
    classes.push_back(CachingAllocator::size_class(512 * tokens));
  }
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  CHECK(classes.size() == 72);
}

// ---------------------------------------------------------------------------------------------
// Elementwise and row ops
// ---------------------------------------------------------------------------------------------

TEST_CASE("cuda allocator pools keep their blocks for their own use until released, then refuse") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  auto& allocator = dynamic_cast<gpu::CachingAllocator&>(gpu.allocator());
  const std::uint64_t pool = allocator.new_pool();
  CHECK(pool != 0);
  allocator.use_pool(pool);
  const void* pooled = Tensor::empty({1000}, DType::F32, allocator).raw_data();  // freed at once
  allocator.use_pool(0);
  // Freed, the block went back to the pool: others of its size class do not get it,
  const Tensor other = Tensor::empty({1000}, DType::F32, allocator);
  CHECK(other.raw_data() != pooled);
  // the pool's next allocation of that class does,
  allocator.use_pool(pool);
  Tensor again = Tensor::empty({1000}, DType::F32, allocator);
  allocator.use_pool(0);
  CHECK(again.raw_data() == pooled);
  // and once the pool is released it is the cache's again.
  again = Tensor();
  allocator.release_pool(pool);
  const Tensor after = Tensor::empty({1000}, DType::F32, allocator);
  CHECK(after.raw_data() == pooled);
  // A released pool, or one never made, cannot be used.
  CHECK_THROWS_AS(allocator.use_pool(pool), Error);
  CHECK_THROWS_AS(allocator.use_pool(pool + 1), Error);
}

TEST_CASE("a replayed step graph runs again on its own context and refuses another") {
  if (gpu_missing()) return;
  Context first(Device::CUDA, 1);
  Context second(Device::CUDA, 1);
  Tensor host = Tensor::empty({8}, DType::F32, first.host_allocator());
  std::iota(host.data<float>(), host.data<float>() + 8, 1.0f);
  const Tensor input = to_device(first, host);
  // The step: a cast to bf16 into memory the graph's pool gives.
  const auto step = [&] {
    Tensor out = Tensor::empty({8}, DType::BF16, first.allocator());
    ops::cast(first, input, out);
    return out;
  };
  gpu::StepGraph graph;
  const std::vector<std::uintptr_t> key = {1};
  const Tensor captured = graph.replay(first, key, step);
  const Tensor replayed = graph.replay(first, key, step);
  CHECK(graph.instantiations() == 1);
  CHECK(graph.replays() == 1);
  CHECK(graph.nodes() == 1);  // the cast's one kernel
  CHECK(download(first, replayed).data<float>()[7] == 8.0f);
  CHECK(download(first, captured).data<float>()[0] == 1.0f);
  // Its pool lives in the first context's allocator: another context is refused.
  CHECK_THROWS_WITH_AS(graph.replay(second, key, step), doctest::Contains("captured on only"),
                       Error);
}

TEST_CASE("cuda embedding adds token and position rows and writes NaN rows for bad ids") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(11);
  const std::int64_t vocab = 50, n_positions = 20;
  for (DType dtype : kFloatTypes) {
    for (std::int64_t width : {64, 768, 1000}) {
      for (std::int64_t rows : {1, 5}) {
        const Tensor wte = rounded(cpu, random_tensor({vocab, width}, rng, cpu.allocator()), dtype);
        const Tensor wpe =
            rounded(cpu, random_tensor({n_positions, width}, rng, cpu.allocator()), dtype);
        std::vector<std::int32_t> ids, positions;
        for (std::int64_t i = 0; i < rows; ++i) {
          ids.push_back(static_cast<std::int32_t>(rng() % vocab));
          positions.push_back(static_cast<std::int32_t>(rng() % n_positions));
        }
        Tensor expected = Tensor::empty({rows, width}, DType::F32, cpu.allocator());
        const std::vector<std::int64_t> wide(positions.begin(), positions.end());
        ops::embedding(cpu, wte, wpe, ids, wide, expected);

        Tensor out = poisoned(gpu, {rows, width}, dtype);
        ops::embedding(gpu, upload(gpu, wte, dtype), upload(gpu, wpe, dtype),
                       to_device(gpu, host_i32(cpu, ids)), to_device(gpu, host_i32(cpu, positions)),
                       out);
        CAPTURE(dtype_name(dtype));
        CAPTURE(width);
        CAPTURE(rows);
        CHECK(device_error(gpu, out, expected) <= tolerance(dtype));
      }
    }
  }

  // An id past the vocabulary and a negative position: those rows are NaN, the others exact.
  const Tensor wte = random_tensor({vocab, 64}, rng, cpu.allocator());
  const Tensor wpe = random_tensor({n_positions, 64}, rng, cpu.allocator());
  Tensor out = filled(gpu, {3, 64}, DType::F32, 7.0f);  // NaN poison would hide unwritten rows
  ops::embedding(gpu, to_device(gpu, wte), to_device(gpu, wpe),
                 to_device(gpu, host_i32(cpu, {3, static_cast<std::int32_t>(vocab), 4})),
                 to_device(gpu, host_i32(cpu, {0, 1, -1})), out);
  const Tensor result = download(gpu, out);
  for (int c = 0; c < 64; ++c) {
    CHECK(result.data<float>()[c] == wte.data<float>()[3 * 64 + c] + wpe.data<float>()[c]);
    CHECK(std::isnan(result.data<float>()[64 + c]));
    CHECK(std::isnan(result.data<float>()[128 + c]));
  }
}

TEST_CASE("cuda layer_norm matches the cpu op, with a large mean and in place") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(12);
  for (DType dtype : kFloatTypes) {
    for (std::int64_t width : {64, 768, 1000}) {
      for (std::int64_t rows : {1, 4}) {
        Tensor x = random_tensor({rows, width}, rng, cpu.allocator(), 3.0f);
        for (std::int64_t c = 0; c < width; ++c) x.data<float>()[c] += 1000.0f;  // row 0
        x = rounded(cpu, x, dtype);
        const Tensor gamma = rounded(cpu, random_tensor({width}, rng, cpu.allocator()), dtype);
        const Tensor beta = rounded(cpu, random_tensor({width}, rng, cpu.allocator()), dtype);
        Tensor expected = Tensor::empty({rows, width}, DType::F32, cpu.allocator());
        ops::layer_norm(cpu, x, gamma, beta, 1e-5f, expected);

        const Tensor device_gamma = upload(gpu, gamma, dtype);
        const Tensor device_beta = upload(gpu, beta, dtype);
        Tensor out = poisoned(gpu, {rows, width}, dtype);
        ops::layer_norm(gpu, upload(gpu, x, dtype), device_gamma, device_beta, 1e-5f, out);
        Tensor in_place = upload(gpu, x, dtype);
        ops::layer_norm(gpu, in_place, device_gamma, device_beta, 1e-5f, in_place);
        CAPTURE(dtype_name(dtype));
        CAPTURE(width);
        CAPTURE(rows);
        CHECK(device_error(gpu, out, expected) <= tolerance(dtype));
        CHECK(device_error(gpu, in_place, expected) <= tolerance(dtype));
      }
    }
  }
}

TEST_CASE("cuda activations and cast match the cpu ops, also in place") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(13);
  for (DType dtype : kFloatTypes) {
    for (std::int64_t n : {1, 1000, 3 * 768 + 1}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(n);
      const Tensor x = rounded(cpu, random_tensor({n}, rng, cpu.allocator(), 4.0f), dtype);
      for (const ActivationName& entry : kActivationNames) {
        CAPTURE(entry.name);
        Tensor expected = Tensor::empty({n}, DType::F32, cpu.allocator());
        ops::activation(cpu, entry.activation, x, expected);
        Tensor out = poisoned(gpu, {n}, dtype);
        ops::activation(gpu, entry.activation, upload(gpu, x, dtype), out);
        CHECK(device_error(gpu, out, expected) <= tolerance(dtype));

        Tensor in_place = upload(gpu, x, dtype);
        ops::activation(gpu, entry.activation, in_place, in_place);
        CHECK(device_error(gpu, in_place, expected) <= tolerance(dtype));
      }
    }
  }

  // Casts between every pair, bit for bit as the cpu's conversion, including values that
  // overflow f16, round to f16 subnormals, ties, infinities, signed zero and NaN.
  Tensor source = random_tensor({1000}, rng, cpu.allocator(), 100.0f);
  const float specials[] = {70000.0f, 65519.0f,       65520.0f, 1e-8f,     3e-5f,
                            -0.0f,    1.00048828125f, INFINITY, -INFINITY, NAN};
  std::copy(std::begin(specials), std::end(specials), source.data<float>());
  for (DType from : kFloatTypes) {
    const Tensor x = source.to_dtype(from, cpu.allocator());
    const Tensor device_x = to_device(gpu, x);
    for (DType to : kFloatTypes) {
      CAPTURE(dtype_name(from));
      CAPTURE(dtype_name(to));
      Tensor expected = Tensor::empty({1000}, to, cpu.allocator());
      ops::cast(cpu, x, expected);
      Tensor out = poisoned(gpu, {1000}, to);
      ops::cast(gpu, device_x, out);
      const Tensor actual = to_host(gpu, out);
      const Tensor actual_f32 = download(gpu, out);
      const Tensor expected_f32 = expected.to_dtype(DType::F32, cpu.allocator());
      int mismatches = 0;
      for (std::int64_t i = 0; i < 1000; ++i) {
        const float e = expected_f32.data<float>()[i];
        if (std::isnan(e)) {  // NaN payloads may differ; NaN-ness may not
          mismatches += std::isnan(actual_f32.data<float>()[i]) ? 0 : 1;
          continue;
        }
        const std::size_t size = dtype_size(to);
        mismatches +=
            std::memcmp(static_cast<const char*>(actual.raw_data()) + i * size,
                        static_cast<const char*>(expected.raw_data()) + i * size, size) != 0;
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("cuda softmax and safe_softmax match the cpu ops on masked and fully masked rows") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(14);
  for (DType dtype : kFloatTypes) {
    for (std::int64_t width : {64, 768, 1000}) {
      for (std::int64_t rows : {1, 3}) {
        Tensor x = random_tensor({rows, width}, rng, cpu.allocator(), 3.0f);
        if (rows > 1) {
          // Row 1: a causal-style mask over its second half. Row 2: fully masked.
          for (std::int64_t c = width / 2; c < width; ++c) x.data<float>()[width + c] = -INFINITY;
          for (std::int64_t c = 0; c < width; ++c) x.data<float>()[2 * width + c] = -INFINITY;
        }
        x = rounded(cpu, x, dtype);
        for (bool safe : {false, true}) {
          CAPTURE(dtype_name(dtype));
          CAPTURE(width);
          CAPTURE(rows);
          CAPTURE(safe);
          Tensor expected = Tensor::empty(x.shape(), DType::F32, cpu.allocator());
          // Not NaN-poisoned: the fully masked row's expected values are NaN for softmax. No
          // probability is 2.
          Tensor out = filled(gpu, x.shape(), dtype, 2.0f);
          Tensor in_place = upload(gpu, x, dtype);
          if (safe) {
            ops::safe_softmax(cpu, x, expected);
            ops::safe_softmax(gpu, upload(gpu, x, dtype), out);
            ops::safe_softmax(gpu, in_place, in_place);
          } else {
            ops::softmax(cpu, x, expected);
            ops::softmax(gpu, upload(gpu, x, dtype), out);
            ops::softmax(gpu, in_place, in_place);
          }
          const auto reference = testing::to_double(expected);
          CHECK(worst_error(download(gpu, out), reference, 1e-3) <= tolerance(dtype));
          CHECK(worst_error(download(gpu, in_place), reference, 1e-3) <= tolerance(dtype));
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Layouts
// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "cuda split_qkv (MHA and GQA) appends to the cache at each token's position; merge_heads "
    "inverts it") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(15);
  struct Case {
    std::int64_t batch, tokens, heads, kv_heads, head_dim, capacity, start;
  };
  // kv_heads < heads: grouped-query attention (group factors 2, 3 and 8).
  for (const Case& c :
       {Case{2, 3, 4, 4, 64, 9, 4}, Case{1, 1, 12, 12, 64, 8, 7}, Case{3, 5, 2, 2, 32, 5, 0},
        Case{2, 3, 4, 2, 64, 9, 4}, Case{1, 1, 12, 4, 64, 8, 7}, Case{2, 4, 8, 1, 32, 6, 1}}) {
    for (DType dtype : kFloatTypes) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(c.tokens);
      CAPTURE(c.start);
      CAPTURE(c.kv_heads);
      const std::int64_t width = c.heads * c.head_dim;
      const std::int64_t qkv_width = (c.heads + 2 * c.kv_heads) * c.head_dim;
      const Shape q_shape = {c.batch, c.heads, c.tokens, c.head_dim};
      const Shape cache_shape = {c.batch, c.kv_heads, c.capacity, c.head_dim};
      const Tensor qkv =
          rounded(cpu, random_tensor({c.batch, c.tokens, qkv_width}, rng, cpu.allocator()), dtype);
      // The cpu reference starts from NaN caches too: rows outside the append stay NaN.
      Tensor q = Tensor::empty(q_shape, DType::F32, cpu.allocator());
      Tensor k = Tensor::empty(cache_shape, DType::F32, cpu.allocator());
      Tensor v = Tensor::empty(cache_shape, DType::F32, cpu.allocator());
      std::fill_n(k.data<float>(), k.numel(), NAN);
      std::fill_n(v.data<float>(), v.numel(), NAN);
      // Token t of row b at (start + t + b) mod capacity: each row at positions of its own.
      Tensor positions = Tensor::empty({c.batch * c.tokens}, DType::I32, cpu.allocator());
      for (std::int64_t i = 0; i < positions.numel(); ++i) {
        positions.data<std::int32_t>()[i] =
            static_cast<std::int32_t>((c.start + i % c.tokens + i / c.tokens) % c.capacity);
      }
      ops::split_qkv(cpu, qkv, q, k, v, positions);

      Tensor device_q = poisoned(gpu, q_shape, dtype);
      Tensor device_k = poisoned(gpu, cache_shape, dtype);
      Tensor device_v = poisoned(gpu, cache_shape, dtype);
      ops::split_qkv(gpu, upload(gpu, qkv, dtype), device_q, device_k, device_v,
                     to_device(gpu, positions));
      CHECK(device_error(gpu, device_q, q) == 0.0);
      CHECK(device_error(gpu, device_k, k) == 0.0);
      CHECK(device_error(gpu, device_v, v) == 0.0);

      Tensor merged = Tensor::empty({c.batch, c.tokens, width}, DType::F32, cpu.allocator());
      ops::merge_heads(cpu, q, merged);
      Tensor device_merged = poisoned(gpu, merged.shape(), dtype);
      ops::merge_heads(gpu, device_q, device_merged);
      CHECK(device_error(gpu, device_merged, merged) == 0.0);
    }
  }
}

TEST_CASE("cuda split_qkv writes no key or value for a token whose position is outside the cache") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(16);
  // Row 0's last token at position `capacity` and row 1's first at -1: where a kernel that did
  // not skip them would write lies inside the cache (the next head's first row, the previous
  // head's last), so a finite poison there shows the stray write.
  const std::int64_t batch = 2, tokens = 3, heads = 4, kv_heads = 2, head_dim = 64, capacity = 9;
  const std::int64_t qkv_width = (heads + 2 * kv_heads) * head_dim;
  const Shape q_shape = {batch, heads, tokens, head_dim};
  const Shape cache_shape = {batch, kv_heads, capacity, head_dim};
  const std::vector<std::int32_t> in_range = {4, 5, 6, 2, 3, 4};
  std::vector<std::int32_t> outside = in_range;
  outside[2] = static_cast<std::int32_t>(capacity);
  outside[3] = -1;
  for (DType dtype : kFloatTypes) {
    CAPTURE(dtype_name(dtype));
    const Tensor qkv =
        rounded(cpu, random_tensor({batch, tokens, qkv_width}, rng, cpu.allocator()), dtype);
    // The reference: the cpu op at in-range positions, then the two tokens' rows put back.
    Tensor q = Tensor::empty(q_shape, DType::F32, cpu.allocator());
    Tensor k = Tensor::empty(cache_shape, DType::F32, cpu.allocator());
    Tensor v = Tensor::empty(cache_shape, DType::F32, cpu.allocator());
    std::fill_n(k.data<float>(), k.numel(), 7.0f);
    std::fill_n(v.data<float>(), v.numel(), 7.0f);
    ops::split_qkv(cpu, qkv, q, k, v, host_i32(cpu, in_range));
    for (const std::int64_t token_row : {2, 3}) {
      const std::int64_t b = token_row / tokens;
      const std::int64_t p = in_range[static_cast<std::size_t>(token_row)];
      for (std::int64_t g = 0; g < kv_heads; ++g) {
        const std::int64_t row = ((b * kv_heads + g) * capacity + p) * head_dim;
        std::fill_n(k.data<float>() + row, head_dim, 7.0f);
        std::fill_n(v.data<float>() + row, head_dim, 7.0f);
      }
    }
    Tensor device_q = poisoned(gpu, q_shape, dtype);
    Tensor device_k = filled(gpu, cache_shape, dtype, 7.0f);
    Tensor device_v = filled(gpu, cache_shape, dtype, 7.0f);
    ops::split_qkv(gpu, upload(gpu, qkv, dtype), device_q, device_k, device_v,
                   to_device(gpu, host_i32(cpu, outside)));
    CHECK(device_error(gpu, device_q, q) == 0.0);  // queries do not depend on positions
    CHECK(device_error(gpu, device_k, k) == 0.0);
    CHECK(device_error(gpu, device_v, v) == 0.0);
  }
}

// ---------------------------------------------------------------------------------------------
// linear (cublasLt)
// ---------------------------------------------------------------------------------------------

namespace {

// out = x W^T (+ b) in float64 from host f32 tensors.
std::vector<double> reference_linear(const Tensor& x, const Tensor& w, const Tensor* b) {
  const std::int64_t rows = x.dim(0), in = x.dim(1), outputs = w.dim(0);
  std::vector<double> out(static_cast<std::size_t>(rows * outputs));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < outputs; ++o) {
      double sum = b != nullptr ? b->data<float>()[o] : 0.0;
      const float* xr = x.data<float>() + r * in;
      const float* wr = w.data<float>() + o * in;
      for (std::int64_t k = 0; k < in; ++k) sum += double(xr[k]) * wr[k];
      out[static_cast<std::size_t>(r * outputs + o)] = sum;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("cuda linear and linear_residual match float64 with and without bias; f32 from bf16") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(16);
  struct Case {
    std::int64_t rows, in, outputs;
  };
  for (const Case& c :
       {Case{1, 64, 1000}, Case{7, 768, 1000}, Case{33, 1000, 768}, Case{5, 67, 45}}) {
    for (DType dtype : kFloatTypes) {
      std::vector<DType> out_dtypes = {dtype};
      if (dtype != DType::F32) out_dtypes.push_back(DType::F32);  // f32 logits from f16/bf16
      for (DType out_dtype : out_dtypes) {
        for (bool with_bias : {false, true}) {
          CAPTURE(c.rows);
          CAPTURE(c.in);
          CAPTURE(c.outputs);
          CAPTURE(dtype_name(dtype));
          CAPTURE(dtype_name(out_dtype));
          CAPTURE(with_bias);
          // x is a view one row into a larger tensor: with K = 67 its start is only 4-byte (f32)
          // or 2-byte (f16/bf16) aligned, which cublasLt's kernel choice must respect.
          const Tensor x_all =
              rounded(cpu, random_tensor({c.rows + 1, c.in}, rng, cpu.allocator()), dtype);
          const Tensor x = x_all.slice_rows(1, c.rows + 1);
          const Tensor w =
              rounded(cpu, random_tensor({c.outputs, c.in}, rng, cpu.allocator()), dtype);
          const Tensor b = rounded(cpu, random_tensor({c.outputs}, rng, cpu.allocator()), dtype);
          const auto expected = reference_linear(x, w, with_bias ? &b : nullptr);

          const Tensor device_x = upload(gpu, x_all, dtype).slice_rows(1, c.rows + 1);
          Tensor out = poisoned(gpu, {c.rows, c.outputs}, out_dtype);
          const Tensor device_w = upload(gpu, w, dtype);
          const Tensor device_b = with_bias ? upload(gpu, b, dtype) : Tensor();
          ops::linear(gpu, device_x, device_w, device_b, out);
          // What is left against float64 is the f32 accumulation along K and the final rounding
          // to out. The accumulation error scales with the partial sums, which are of the size
          // of a typical output, sqrt(K) (normal(0, 1) inputs), not with the output itself: a
          // model of sequential f32 FMAs (and of tensor cores truncating every 16 products) gives
          // up to 5e-5 / 6e-5 of max(|expected|, 1) at K = 1000 but 3e-6 / 4e-6 of
          // max(|expected|, sqrt(K)). So errors are measured against the latter.
          const double typical_output = std::sqrt(static_cast<double>(c.in));
          CHECK(worst_error(download(gpu, out), expected, typical_output) <= tolerance(out_dtype));
          if (out_dtype == dtype) {
            // linear_residual adds the product to what out holds (beta = 1, in place): twice.
            ops::linear_residual(gpu, device_x, device_w, device_b, out);
            std::vector<double> twice = expected;
            for (double& value : twice) value *= 2.0;
            CHECK(worst_error(download(gpu, out), twice, typical_output) <=
                  2.0 * tolerance(out_dtype));
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

namespace {

// The distribution the cpu Sampler draws from (runtime/sampler.cpp, the same steps in the same
// precision): probabilities by token id, 0 for dropped tokens. `margin` gets how far, relative
// to the target, the top-p boundary's partial sums lie from it (a case nearer than ~1e-9 could
// fall either way on two devices).
std::vector<double> reference_probabilities(const float* logits, std::int64_t n,
                                            const SamplingOptions& options, double* margin) {
  std::vector<double> probs(static_cast<std::size_t>(n), 0.0);
  *margin = 1.0;
  if (options.temperature == 0.0f) {
    probs[static_cast<std::size_t>(std::max_element(logits, logits + n) - logits)] = 1.0;
    return probs;
  }
  const float max_logit = *std::max_element(logits, logits + n);
  std::vector<std::pair<float, std::int64_t>> candidates;
  for (std::int64_t i = 0; i < n; ++i) {
    candidates.emplace_back(std::exp((logits[i] - max_logit) / options.temperature), i);
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::size_t kept = candidates.size();
  if (options.top_k > 0 && static_cast<std::size_t>(options.top_k) < kept) {
    kept = static_cast<std::size_t>(options.top_k);
  }
  double mass = 0.0;
  for (std::size_t i = 0; i < kept; ++i) mass += candidates[i].first;
  if (options.top_p < 1.0f) {
    const double target = options.top_p * mass;
    double running = 0.0;
    std::size_t nucleus = 0;
    while (nucleus < kept && running < target) running += candidates[nucleus++].first;
    const double before_last = running - candidates[nucleus - 1].first;
    *margin = std::min(std::fabs(running - target), std::fabs(target - before_last)) / target;
    kept = std::max<std::size_t>(nucleus, 1);
    mass = running;
  }
  for (std::size_t i = 0; i < kept; ++i) {
    probs[static_cast<std::size_t>(candidates[i].second)] = candidates[i].first / mass;
  }
  return probs;
}

// Random logits [rows, vocab] on the host; `quantum` > 0 rounds them to multiples of it, which
// makes many exact ties.
Tensor random_logits(Context& cpu, std::int64_t rows, std::int64_t vocab, float scale,
                     float quantum, std::mt19937& rng) {
  Tensor logits = random_tensor({rows, vocab}, rng, cpu.allocator(), scale);
  if (quantum > 0.0f) {
    for (std::int64_t i = 0; i < logits.numel(); ++i) {
      logits.data<float>()[i] = std::round(logits.data<float>()[i] / quantum) * quantum;
    }
  }
  return logits;
}

}  // namespace

TEST_CASE("cuda greedy sampling is the cpu's arg max, lowest id on ties") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(17);
  const std::int64_t rows = 4, vocab = 50257;
  Tensor logits = random_logits(cpu, rows, vocab, 3.0f, 0.0f, rng);
  float* data = logits.data<float>();
  data[1 * vocab + 40000] = 100.0f;  // row 1: the max twice, the higher id first found by most
  data[1 * vocab + 17] = 100.0f;     // threads' strides; the answer is 17
  std::fill_n(data + 2 * vocab, vocab, 0.0f);  // row 2: all equal: 0
  data[3 * vocab + vocab - 1] = 50.0f;         // row 3: the last id

  Tensor ids = poisoned(gpu, {rows}, DType::I32);
  ops::sample_tokens(gpu, to_device(gpu, logits), SamplingOptions{}, 0, ids);
  const Tensor host_ids = to_host(gpu, ids);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::span<const float> row(data + r * vocab, static_cast<std::size_t>(vocab));
    CAPTURE(r);
    CHECK(host_ids.data<std::int32_t>()[r] == Sampler(SamplingOptions{}).sample(row));
  }
  CHECK(host_ids.data<std::int32_t>()[1] == 17);
  CHECK(host_ids.data<std::int32_t>()[2] == 0);
}

TEST_CASE("cuda top-k / top-p distributions match the cpu sampler's, ties included") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(18);
  struct Case {
    std::int64_t vocab;
    float quantum;  // > 0: logits with many exact ties
    SamplingOptions options;
  };
  const std::vector<Case> cases = {
      {1000, 0.0f, {1.0f, 0, 1.0f, 1}},    {1000, 0.0f, {0.7f, 50, 1.0f, 2}},
      {50257, 0.0f, {1.3f, 0, 0.9f, 3}},   {50257, 0.0f, {1.0f, 40, 0.95f, 4}},
      {1000, 0.5f, {0.8f, 3, 1.0f, 5}},    {1000, 0.5f, {1.0f, 0, 0.5f, 6}},
      {1000, 0.25f, {0.6f, 100, 0.8f, 7}}, {64, 0.0f, {1.0f, 1, 1.0f, 8}},
      {7, 0.0f, {2.0f, 0, 0.3f, 9}},       {50257, 0.5f, {1.0f, 0, 0.7f, 10}},
  };
  for (const Case& c : cases) {
    const std::int64_t rows = 2;
    const Tensor logits = random_logits(cpu, rows, c.vocab, 2.0f, c.quantum, rng);
    Tensor probs = poisoned(gpu, {rows, c.vocab}, DType::F32);
    ops::sampling_probabilities(gpu, to_device(gpu, logits), c.options, probs);
    const Tensor actual = download(gpu, probs);
    for (std::int64_t r = 0; r < rows; ++r) {
      CAPTURE(c.vocab);
      CAPTURE(c.quantum);
      CAPTURE(c.options.temperature);
      CAPTURE(c.options.top_k);
      CAPTURE(c.options.top_p);
      CAPTURE(r);
      double margin = 0.0;
      const auto expected =
          reference_probabilities(logits.data<float>() + r * c.vocab, c.vocab, c.options, &margin);
      // Else the case itself is ambiguous: change its seed. 5e-7, not less: the device's expf
      // may differ from the host's by 2 ulp, which moves a top-p boundary sum by up to ~5e-7.
      REQUIRE(margin > 5e-7);
      int wrong_set = 0;  // kept on one side, dropped on the other
      double worst = 0.0;
      double sum = 0.0;
      for (std::int64_t i = 0; i < c.vocab; ++i) {
        const double e = expected[static_cast<std::size_t>(i)];
        const double a = actual.data<float>()[r * c.vocab + i];
        sum += a;
        // Tokens below 1e-9 may fall under the draw's 2^-38 fixed-point resolution.
        if (e > 1e-9 ? a <= 0.0 : (e == 0.0 && a != 0.0)) ++wrong_set;
        worst = std::max(worst, std::fabs(a - e) / (1e-7 + e));
      }
      CHECK(wrong_set == 0);
      CHECK(worst <= 1e-4);
      CHECK(std::fabs(sum - 1.0) <= 1e-5);
    }
  }
}

TEST_CASE("cuda sampling frequencies follow the distribution, and a seed reproduces the draws") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(19);
  const std::int64_t vocab = 64, rows = 5000, steps = 4;
  const SamplingOptions options{0.9f, 20, 0.9f, 7};
  // One row of logits repeated: every row and step is an independent draw (its own numbers).
  const Tensor one = random_logits(cpu, 1, vocab, 2.0f, 0.0f, rng);
  Tensor logits = Tensor::empty({rows, vocab}, DType::F32, cpu.allocator());
  for (std::int64_t r = 0; r < rows; ++r) {
    std::copy_n(one.data<float>(), vocab, logits.data<float>() + r * vocab);
  }
  const Tensor device_logits = to_device(gpu, logits);
  double margin = 0.0;
  const auto expected = reference_probabilities(one.data<float>(), vocab, options, &margin);
  REQUIRE(margin > 5e-7);  // as above: beyond the device's expf differences

  std::vector<double> counts(static_cast<std::size_t>(vocab), 0.0);
  std::vector<std::int32_t> first_step;
  for (std::uint64_t step = 0; step < steps; ++step) {
    Tensor ids = poisoned(gpu, {rows}, DType::I32);
    ops::sample_tokens(gpu, device_logits, options, step, ids);
    const Tensor host = to_host(gpu, ids);
    const std::int32_t* id = host.data<std::int32_t>();
    for (std::int64_t r = 0; r < rows; ++r) {
      REQUIRE(id[r] >= 0);
      REQUIRE(id[r] < vocab);
      counts[static_cast<std::size_t>(id[r])] += 1.0;
    }
    if (step == 0) first_step.assign(id, id + rows);
  }
  const double draws = static_cast<double>(rows * steps);
  for (std::int64_t i = 0; i < vocab; ++i) {
    const double p = expected[static_cast<std::size_t>(i)];
    const double frequency = counts[static_cast<std::size_t>(i)] / draws;
    CAPTURE(i);
    CAPTURE(p);
    CAPTURE(frequency);
    if (p == 0.0) {
      CHECK(frequency == 0.0);  // dropped by top-k / top-p: never drawn
    } else {
      CHECK(std::fabs(frequency - p) <= 5.0 * std::sqrt(p * (1.0 - p) / draws) + 1e-4);
    }
  }

  // The same seed and step draw the same tokens; another step or seed draws others.
  Tensor again = poisoned(gpu, {rows}, DType::I32);
  ops::sample_tokens(gpu, device_logits, options, 0, again);
  const Tensor host_again = to_host(gpu, again);
  CHECK(std::equal(first_step.begin(), first_step.end(), host_again.data<std::int32_t>()));
  SamplingOptions other_seed = options;
  other_seed.seed = 8;
  ops::sample_tokens(gpu, device_logits, other_seed, 0, again);
  const Tensor host_other = to_host(gpu, again);
  const auto same =
      std::inner_product(first_step.begin(), first_step.end(), host_other.data<std::int32_t>(),
                         std::int64_t{0}, std::plus<>(), std::equal_to<>());
  // Two independent draws agree with probability sum_i p_i^2.
  double collision = 0.0;
  for (double p : expected) collision += p * p;
  CHECK(static_cast<double>(same) <= (collision + 0.05) * static_cast<double>(rows));
}

// ---------------------------------------------------------------------------------------------
// The Llama family's ops
// ---------------------------------------------------------------------------------------------

namespace {

// Unit roundoff of a storage dtype: the largest relative error of one rounding to it.
double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return 0x1p-11;
    case DType::BF16:
      return 0x1p-8;
    default:
      return 0x1p-24;
  }
}

// rms_norm and swiglu round an intermediate (the normalised value, the silu) to the storage
// dtype, as transformers does, and then the result: against the cpu's f32 op on the same
// rounded inputs that is 2 r + r^2 relative, plus 1e-5 for f32's differences in the order of
// operations (the gpu's f32 sums of up to 5000 squares: ~40u ~ 2.4e-6).
double two_roundings(DType dtype) {
  const double r = unit_roundoff(dtype);
  return 2 * r + r * r + 1e-5;
}

}  // namespace

TEST_CASE("cuda rms_norm matches the cpu op on ordinary, huge and tiny rows, also in place") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(31);
  for (DType dtype : kFloatTypes) {
    // f16 tops out at 65504: its "huge" rows are 1e3, the others' 1e15 (squares 1e30, still
    // summable in f32).
    const float huge = dtype == DType::F16 ? 1e3f : 1e15f;
    for (float scale : {1.0f, huge, 1e-3f, 1e-20f}) {
      for (std::int64_t width : {64, 576, 2048, 5000}) {
        const std::int64_t rows = 3;
        const Tensor x =
            rounded(cpu, random_tensor({rows, width}, rng, cpu.allocator(), scale), dtype);
        const Tensor weight = rounded(cpu, random_tensor({width}, rng, cpu.allocator()), dtype);
        Tensor expected = Tensor::empty({rows, width}, DType::F32, cpu.allocator());
        ops::rms_norm(cpu, x, weight, 1e-6f, expected);

        const Tensor device_weight = upload(gpu, weight, dtype);
        Tensor out = poisoned(gpu, {rows, width}, dtype);
        ops::rms_norm(gpu, upload(gpu, x, dtype), device_weight, 1e-6f, out);
        Tensor in_place = upload(gpu, x, dtype);
        ops::rms_norm(gpu, in_place, device_weight, 1e-6f, in_place);
        CAPTURE(dtype_name(dtype));
        CAPTURE(scale);
        CAPTURE(width);
        // Relative everywhere (the tiny rows' outputs are ~1e-17), except in f16, whose
        // subnormals (below 6.1e-5) are coarser: there outputs below 1e-3 are compared
        // absolutely, to 1e-3 times the bound (> f16's largest subnormal rounding, 3e-8).
        const double floor = dtype == DType::F16 ? 1e-3 : 1e-30;
        const auto reference = testing::to_double(expected);
        CHECK(worst_error(download(gpu, out), reference, floor) <= two_roundings(dtype));
        CHECK(worst_error(download(gpu, in_place), reference, floor) <= two_roundings(dtype));
      }
    }
  }
}

TEST_CASE("cuda head_rms_norm_ matches the cpu op, the value heads untouched") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(32);
  for (DType dtype : kFloatTypes) {
    for (std::int64_t head_dim : {64, 128}) {
      const std::int64_t rows = 3, q_heads = 14, kv_heads = 2;
      const std::int64_t width = (q_heads + 2 * kv_heads) * head_dim;
      const Tensor x =
          rounded(cpu, random_tensor({rows, width}, rng, cpu.allocator(), 3.0f), dtype);
      const Tensor q_weight = rounded(cpu, random_tensor({head_dim}, rng, cpu.allocator()), dtype);
      const Tensor k_weight = rounded(cpu, random_tensor({head_dim}, rng, cpu.allocator()), dtype);
      Tensor expected = Tensor::empty(x.shape(), DType::F32, cpu.allocator());
      std::copy_n(x.data<float>(), x.numel(), expected.data<float>());
      ops::head_rms_norm_(cpu, expected, q_weight, k_weight, q_heads, kv_heads, 1e-6f);

      Tensor out = upload(gpu, x, dtype);
      ops::head_rms_norm_(gpu, out, upload(gpu, q_weight, dtype), upload(gpu, k_weight, dtype),
                          q_heads, kv_heads, 1e-6f);
      CAPTURE(dtype_name(dtype));
      CAPTURE(head_dim);
      // As rms_norm's (above); the value heads, copied through untouched, are equal exactly.
      const Tensor got = download(gpu, out);
      CHECK(worst_error(got, testing::to_double(expected), 1e-30) <= two_roundings(dtype));
      const std::int64_t values_from = (q_heads + kv_heads) * head_dim;
      for (std::int64_t n = 0; n < rows; ++n) {
        CHECK(std::equal(got.data<float>() + n * width + values_from,
                         got.data<float>() + (n + 1) * width,
                         x.data<float>() + n * width + values_from));
      }
    }
  }
}

TEST_CASE("cuda swiglu matches the cpu op, large negative gates included") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(32);
  // Saturated gates on both sides (-6e4 is near f16's largest finite value).
  const float gates[] = {0.0f, -20.0f, -88.5f, -100.0f, -1e3f, -6e4f, 20.0f, 100.0f};
  for (DType dtype : kFloatTypes) {
    for (std::int64_t units : {64, 1000, 1536}) {
      for (std::int64_t rows : {1, 5}) {
        Tensor gate_up = random_tensor({rows, 2 * units}, rng, cpu.allocator(), 4.0f);
        std::copy(std::begin(gates), std::end(gates), gate_up.data<float>());
        gate_up = rounded(cpu, gate_up, dtype);
        Tensor expected = Tensor::empty({rows, units}, DType::F32, cpu.allocator());
        ops::swiglu(cpu, gate_up, expected);
        Tensor out = poisoned(gpu, {rows, units}, dtype);
        ops::swiglu(gpu, upload(gpu, gate_up, dtype), out);
        CAPTURE(dtype_name(dtype));
        CAPTURE(units);
        CAPTURE(rows);
        CHECK(device_error(gpu, out, expected) <= two_roundings(dtype));
      }
    }
  }
}

TEST_CASE("cuda rotary_embedding_ matches the cpu op on grouped heads at ragged positions") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(2);
  std::mt19937 rng(33);
  struct Case {
    std::int64_t q_heads, kv_heads, head_dim;
    std::vector<std::int32_t> positions;
  };
  const ops::Llama3RopeScaling llama3{32.0, 1.0, 4.0, 8192};
  std::vector<std::int32_t> long_chunk(33);
  std::iota(long_chunk.begin(), long_chunk.end(), 50);
  for (const Case& c : {Case{4, 4, 64, {0, 1, 2, 3, 4, 5, 6}}, Case{8, 2, 128, {17, 18, 19, 2}},
                        Case{9, 3, 64, {299}}, Case{6, 1, 128, long_chunk}}) {
    const std::vector<float> inv = ops::rotary_inverse_frequencies(c.head_dim, 500000.0, llama3);
    const ops::RotaryTable table = ops::rotary_table(inv, 300, cpu.allocator());
    const ops::RotaryTable device_table{to_device(gpu, table.cos), to_device(gpu, table.sin)};
    const auto rows = static_cast<std::int64_t>(c.positions.size());
    Tensor positions = Tensor::empty({rows}, DType::I32, cpu.allocator());
    std::copy(c.positions.begin(), c.positions.end(), positions.data<std::int32_t>());
    const Tensor device_positions = to_device(gpu, positions);
    const std::int64_t rotated_heads = c.q_heads + c.kv_heads;
    for (DType dtype : kFloatTypes) {
      Tensor qkv = rounded(
          cpu,
          random_tensor({rows, (rotated_heads + c.kv_heads) * c.head_dim}, rng, cpu.allocator()),
          dtype);
      Tensor device_qkv = upload(gpu, qkv, dtype);
      ops::rotary_embedding_(cpu, qkv, rotated_heads, positions, table);
      ops::rotary_embedding_(gpu, device_qkv, rotated_heads, device_positions, device_table);
      CAPTURE(dtype_name(dtype));
      CAPTURE(c.q_heads);
      CAPTURE(c.kv_heads);
      // Both compute a c -/+ b s in f32 (each within 2u (|a| + |b|) of exact, |a|, |b| < 6
      // here: < 1.5e-6 apart, under the 1e-5); the gpu then rounds once to its dtype. The value
      // heads are untouched on both: equal.
      CHECK(device_error(gpu, device_qkv, qkv) <= unit_roundoff(dtype) + 1e-5);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Argument checks
// ---------------------------------------------------------------------------------------------

TEST_CASE("ops refuse tensors spread over two devices") {
  if (gpu_missing()) return;
  Context gpu(Device::CUDA, 1);
  Context cpu(1);
  Tensor host = Tensor::zeros({2, 3}, DType::F32, cpu.allocator());
  Tensor device = zeros_on(gpu, {2, 3}, DType::F32);
  CHECK_THROWS_WITH_AS(ops::activation(gpu, Activation::GeluTanh, host, device),
                       doctest::Contains("one device"), Error);
  CHECK_THROWS_WITH_AS(ops::linear(gpu, device, host, Tensor(), device),
                       doctest::Contains("one device"), Error);
  Tensor host_weight = Tensor::zeros({3}, DType::F32, cpu.allocator());
  CHECK_THROWS_WITH_AS(ops::rms_norm(gpu, device, host_weight, 1e-6f, device),
                       doctest::Contains("one device"), Error);
  Tensor device_qkv = zeros_on(gpu, {1, 16}, DType::F32);
  const Tensor device_positions = zeros_on(gpu, {1}, DType::I32);
  const ops::RotaryTable host_table =
      ops::rotary_table(ops::rotary_inverse_frequencies(4, 10000.0, {}), 4, cpu.allocator());
  CHECK_THROWS_WITH_AS(ops::rotary_embedding_(gpu, device_qkv, 3, device_positions, host_table),
                       doctest::Contains("one device"), Error);
  Tensor ids = Tensor::empty({2}, DType::I32, cpu.allocator());
  CHECK_THROWS_WITH_AS(ops::sample_tokens(gpu, device, SamplingOptions{}, 0, ids),
                       doctest::Contains("one device"), Error);
  Tensor device_half = zeros_on(gpu, {2, 3}, DType::F16);
  CHECK_THROWS_WITH_AS(ops::activation(gpu, Activation::GeluTanh, device_half, device),
                       doctest::Contains("must be f16"), Error);
}

TEST_CASE("cuBLAS and cublasLt are opened on demand, every function attnscope calls found") {
  // No GPU needed: loading the libraries and asking a status name run on the host. A CPU run
  // never gets here, so it never maps the libraries (runtime/cuda/cublas_library.h).
  const gpu::CublasLibrary& library = gpu::cublas();
  CHECK(std::string(library.status_name(CUBLAS_STATUS_SUCCESS)) == "CUBLAS_STATUS_SUCCESS");
  CHECK(std::string(library.status_name(CUBLAS_STATUS_NOT_INITIALIZED)) ==
        "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(&gpu::cublas() == &library);  // loaded once
}
