// Tensors, views, the allocator's byte accounting and the KV cache.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/error.h"
#include "runtime/kv_cache.h"
#include "runtime/tensor.h"

using namespace attnscope;

TEST_CASE("the allocator counts current and peak bytes") {
  CpuAllocator allocator;
  {
    Tensor a = Tensor::empty({10, 10}, DType::F32, allocator);
    CHECK(allocator.current_bytes() == 400);
    {
      Tensor b = Tensor::empty({8}, DType::BF16, allocator);
      CHECK(allocator.current_bytes() == 416);
      CHECK(reinterpret_cast<std::uintptr_t>(b.raw_data()) % 64 == 0);
    }
    CHECK(allocator.current_bytes() == 400);
    CHECK(allocator.peak_bytes() == 416);
    allocator.reset_peak();
    CHECK(allocator.peak_bytes() == 400);
  }
  CHECK(allocator.current_bytes() == 0);
  CHECK(allocator.allocation_count() == 2);
}

TEST_CASE("views share storage and keep it alive") {
  CpuAllocator allocator;
  Tensor rows;
  {
    Tensor t = Tensor::zeros({4, 3}, DType::F32, allocator);
    for (int i = 0; i < 12; ++i) t.data<float>()[i] = static_cast<float>(i);
    rows = t.slice_rows(1, 3);
    Tensor flat = t.reshape({12});
    flat.data<float>()[4] = 40.0f;
  }
  CHECK(allocator.current_bytes() == 48);  // the parent's buffer lives on through the view
  REQUIRE(rows.shape() == Shape{2, 3});
  CHECK(rows.data<float>()[0] == 3.0f);
  CHECK(rows.data<float>()[1] == 40.0f);
  CHECK(rows.data<float>()[5] == 8.0f);
  CHECK(rows.nbytes() == 24);
  rows = Tensor();
  CHECK(allocator.current_bytes() == 0);
}

TEST_CASE("bad shapes, reshapes and slices are errors") {
  CpuAllocator allocator;
  CHECK_THROWS_AS(Tensor::empty({-1, 2}, DType::F32, allocator), Error);
  CHECK_THROWS_AS(Tensor::empty({1ll << 40, 1ll << 40}, DType::F32, allocator), Error);
  CHECK_THROWS_AS(checked_numel(Shape{1ll << 62, 4}), Error);
  Tensor t = Tensor::empty({2, 3}, DType::F32, allocator);
  CHECK_THROWS_AS(t.reshape({4, 2}), Error);
  CHECK_THROWS_AS(t.slice_rows(1, 3), Error);
  CHECK_THROWS_AS(t.data<std::uint16_t>(), Error);
  CHECK_THROWS_AS(t.dim(2), Error);
  CHECK(t.dim(-1) == 3);
}

TEST_CASE("an impossible allocation is a clear error, not a crash") {
  CpuAllocator allocator;
  CHECK_THROWS_WITH_AS(allocator.allocate(SIZE_MAX - 8), doctest::Contains("out of memory"), Error);
  CHECK(allocator.current_bytes() == 0);
}

TEST_CASE("to_dtype converts the elements") {
  CpuAllocator allocator;
  Tensor t = Tensor::empty({3}, DType::F32, allocator);
  t.data<float>()[0] = 1.0f;
  t.data<float>()[1] = -2.5f;
  t.data<float>()[2] = 1.0f / 3.0f;
  Tensor half = t.to_dtype(DType::BF16, allocator);
  Tensor back = half.to_dtype(DType::F32, allocator);
  CHECK(back.data<float>()[0] == 1.0f);
  CHECK(back.data<float>()[1] == -2.5f);
  CHECK(back.data<float>()[2] == doctest::Approx(1.0 / 3.0).epsilon(1.0 / 256));
}

TEST_CASE("the KV cache allocates once and refuses to overflow") {
  CpuAllocator allocator;
  KVCache cache(2, 1, 4, 16, 8, DType::F32, allocator);
  CHECK(cache.nbytes() == 2 * 2 * 4 * 16 * 8 * 4);
  CHECK(allocator.current_bytes() == cache.nbytes());
  CHECK(cache.keys(1).shape() == Shape{1, 4, 16, 8});
  cache.advance(10);
  CHECK(cache.length() == 10);
  CHECK_THROWS_AS(cache.advance(7), Error);
  cache.advance(6);
  CHECK(cache.length() == 16);
  cache.clear();
  CHECK(cache.length() == 0);
}

namespace {

// Host memory that arrives full of 0xAB bytes, as reused memory may: what a zeroed tensor must
// overwrite.
class PoisonedCpuAllocator final : public Allocator {
 public:
  Device device() const override { return Device::CPU; }

 protected:
  void* raw_allocate(std::size_t bytes) override {
    const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
    void* ptr = std::aligned_alloc(64, rounded);
    if (ptr != nullptr) std::memset(ptr, 0xAB, rounded);
    return ptr;
  }
  void raw_deallocate(void* ptr, std::size_t /*bytes*/) noexcept override { std::free(ptr); }
};

}  // namespace

TEST_CASE("a cpu KV cache starts zeroed, whatever its memory held before") {
  PoisonedCpuAllocator allocator;
  KVCache cache(2, 1, 2, 16, 8, DType::F32, allocator);
  for (std::int64_t l = 0; l < 2; ++l) {
    for (const Tensor* t : {&cache.keys(l), &cache.values(l)}) {
      CHECK(std::all_of(t->data<float>(), t->data<float>() + t->numel(),
                        [](float v) { return v == 0.0f; }));
    }
  }
}

TEST_CASE(
    "empty_on_huge_pages: disjoint 64-byte-aligned views of one block, 2 MiB-aligned when large") {
  const auto address = [](const Tensor& t) {
    return reinterpret_cast<std::uintptr_t>(t.raw_data());
  };
  // Small: exactly the tensors' bytes, each rounded up to a line; no room for a huge page.
  {
    CpuAllocator allocator;
    const std::vector<TensorSpec> specs = {
        {{3, 5}, DType::F32}, {{7}, DType::F16}, {{2, 32}, DType::Q8_0}};
    const std::vector<Tensor> small = empty_on_huge_pages(specs, allocator);
    REQUIRE(small.size() == 3);
    CHECK(allocator.current_bytes() == 64 + 64 + 128);  // 60, 14 and 68 bytes
    CHECK(allocator.allocation_count() == 1);
    for (std::size_t i = 0; i < small.size(); ++i) {
      CHECK(small[i].shape() == specs[i].shape);
      CHECK(small[i].dtype() == specs[i].dtype);
      CHECK(address(small[i]) % 64 == 0);
      if (i > 0) CHECK(address(small[i]) >= address(small[i - 1]) + small[i - 1].nbytes());
    }
  }
  // Large: the first view on a 2 MiB boundary, 2 MiB of room beside the tensors; every view
  // written whole without touching its neighbours.
  CpuAllocator allocator;
  const std::vector<TensorSpec> specs = {
      {{1000, 1000}, DType::F32}, {{5}, DType::F32}, {{300, 1001}, DType::F32}};
  {
    const std::vector<Tensor> large = empty_on_huge_pages(specs, allocator);
    CHECK(address(large[0]) % kHugePageBytes == 0);
    CHECK(allocator.current_bytes() == 4000000 + 64 + 1201216 + kHugePageBytes);
    for (std::size_t i = 0; i < large.size(); ++i) {
      std::fill_n(large[i].data<float>(), large[i].numel(), static_cast<float>(i));
    }
    for (std::size_t i = 0; i < large.size(); ++i) {
      const float* v = large[i].data<float>();
      CHECK(std::all_of(v, v + large[i].numel(),
                        [&](float x) { return x == static_cast<float>(i); }));
    }
  }
  CHECK(allocator.current_bytes() == 0);  // the block went with its last view
  // Device memory is refused before anything is allocated.
  class DeviceAllocator final : public Allocator {
   public:
    Device device() const override { return Device::CUDA; }

   protected:
    void* raw_allocate(std::size_t) override { return nullptr; }
    void raw_deallocate(void*, std::size_t) noexcept override {}
  } device_allocator;
  CHECK_THROWS_WITH_AS(empty_on_huge_pages(specs, device_allocator),
                       doctest::Contains("for host memory"), Error);
}
