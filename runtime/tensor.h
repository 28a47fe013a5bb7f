// Tensor: a dtype, a device, a shape and contiguous row-major bytes.
//
// A block-quantized tensor (q8_0) stores its values in blocks of 32 that share a scale: its last
// dimension must be a multiple of 32, so that every row (and every slice of rows) is whole blocks.
//
// The bytes live in a shared Buffer, so copying a Tensor is cheap and views (a reshape, or a
// slice of rows along the first dimension) share storage with their parent. A Buffer either
// owns its bytes (taken from an Allocator, which counts them) or borrows them from something
// kept alive beside it (a memory-mapped safetensors file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/dtype.h"

namespace attnscope {

using Shape = std::vector<std::int64_t>;

// "[2, 3, 4]"
std::string shape_string(std::span<const std::int64_t> shape);
// Product of the dims; throws Error when a dim is negative or the product overflows.
std::int64_t checked_numel(std::span<const std::int64_t> shape);

class Buffer {
 public:
  Buffer(Allocator& allocator, std::size_t bytes);  // owning, counted by the allocator
  Buffer(void* data, std::size_t bytes, Device device, std::shared_ptr<const void> keep_alive);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_ = Device::CPU;
  Allocator* allocator_ = nullptr;          // set when owning
  std::shared_ptr<const void> keep_alive_;  // set when borrowing
};

class Tensor {
 public:
  Tensor() = default;

  // Uninitialised storage from `allocator`.
  static Tensor empty(const Shape& shape, DType dtype, Allocator& allocator);
  static Tensor zeros(const Shape& shape, DType dtype, Allocator& allocator);
  // A view of bytes owned elsewhere; `keep_alive` is held as long as any view exists.
  static Tensor borrow(void* data, const Shape& shape, DType dtype, Device device,
                       std::shared_ptr<const void> keep_alive);

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return buffer_ ? buffer_->device() : Device::CPU; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Size of dimension i; negative i counts from the end.
  std::int64_t dim(int i) const;
  std::int64_t numel() const { return numel_; }
  std::size_t nbytes() const { return storage_bytes(dtype_, numel_); }

  void* raw_data() const { return static_cast<char*>(buffer_->data()) + offset_; }
  // Typed access; checks that the dtype is f32 (float), a 16-bit type (std::uint16_t) or i32
  // (std::int32_t); q8_0 has none (raw_data() points at its blocks). On a CUDA tensor the
  // pointer is a device address.
  template <typename T>
  T* data() const;

  // Same bytes, another shape of the same element count (for q8_0, a last dimension that is still
  // whole blocks).
  Tensor reshape(const Shape& shape) const;
  // Rows [begin, end) of the first dimension, sharing storage.
  Tensor slice_rows(std::int64_t begin, std::int64_t end) const;
  // A new tensor holding these elements converted to `dtype`.
  Tensor to_dtype(DType dtype, Allocator& allocator) const;

 private:
  std::shared_ptr<Buffer> buffer_;
  std::size_t offset_ = 0;  // bytes from the buffer's start
  DType dtype_ = DType::F32;
  Shape shape_;
  std::int64_t numel_ = 0;
};

// Host tensors that every step streams through (a cpu model's weights, a cpu KV cache), made
// together: uninitialised tensors of these shapes and dtypes as views of one allocation from the
// cpu `allocator`, each starting on a 64-byte line. A block of 2 MiB or more starts on a 2 MiB
// page (up to 2 MiB more are allocated to find one) and is advised for huge pages
// (runtime/allocator.h says why). The block lives as long as any of them.
struct TensorSpec {
  Shape shape;
  DType dtype = DType::F32;
};
std::vector<Tensor> empty_on_huge_pages(std::span<const TensorSpec> specs, Allocator& allocator);

template <>
float* Tensor::data<float>() const;
template <>
std::uint16_t* Tensor::data<std::uint16_t>() const;
template <>
std::int32_t* Tensor::data<std::int32_t>() const;

}  // namespace attnscope
