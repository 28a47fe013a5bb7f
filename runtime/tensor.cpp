#include "runtime/tensor.h"

#include <cstdint>
#include <cstring>
#include <limits>

#include "runtime/error.h"

namespace attnscope {

std::string shape_string(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::int64_t checked_numel(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw Error("shape", "negative dimension in " + shape_string(shape));
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) {
      throw Error("shape", "element count of " + shape_string(shape) + " overflows");
    }
    n *= d;
  }
  return n;
}

namespace {

// Block-quantized dtypes need rows of whole blocks: the last dimension a multiple of the block.
void check_whole_blocks(const Shape& shape, DType dtype) {
  const std::int64_t block = block_elements(dtype);
  if (block == 1) return;
  check(!shape.empty() && shape.back() % block == 0, "tensor", [&] {
    return std::string(dtype_name(dtype)) + " stores blocks of " + std::to_string(block) +
           " values along the last dimension; shape " + shape_string(shape) + " does not";
  });
}

}  // namespace

Buffer::Buffer(Allocator& allocator, std::size_t bytes)
    : data_(allocator.allocate(bytes)),
      bytes_(bytes),
      device_(allocator.device()),
      allocator_(&allocator) {}

Buffer::Buffer(void* data, std::size_t bytes, Device device, std::shared_ptr<const void> keep_alive)
    : data_(data), bytes_(bytes), device_(device), keep_alive_(std::move(keep_alive)) {}

Buffer::~Buffer() {
  if (allocator_) allocator_->deallocate(data_, bytes_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Allocator& allocator) {
  Tensor t;
  t.numel_ = checked_numel(shape);
  check_whole_blocks(shape, dtype);
  if (static_cast<std::uint64_t>(t.numel_) > std::numeric_limits<std::size_t>::max() / 4) {
    throw Error("tensor", "shape " + shape_string(shape) + " is too large");
  }
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.buffer_ = std::make_shared<Buffer>(allocator, t.nbytes());
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Allocator& allocator) {
  Tensor t = empty(shape, dtype, allocator);
  if (t.device() != Device::CPU) throw Error("tensor", "zeros() is implemented for cpu only");
  std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

std::vector<Tensor> empty_on_huge_pages(std::span<const TensorSpec> specs, Allocator& allocator) {
  check(allocator.device() == Device::CPU, "tensor", "empty_on_huge_pages() is for host memory");
  constexpr std::size_t kLine = 64;
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (const TensorSpec& spec : specs) {
    offsets.push_back(total);
    total += (storage_bytes(spec.dtype, checked_numel(spec.shape)) + kLine - 1) / kLine * kLine;
  }
  // Room to start on a 2 MiB boundary wherever the allocator puts the block, for a block that
  // can hold a huge page at all.
  const std::size_t room = total >= kHugePageBytes ? kHugePageBytes : 0;
  const auto block = std::make_shared<Buffer>(allocator, total + room);
  char* start = static_cast<char*>(block->data());
  if (room != 0) {
    const auto address = reinterpret_cast<std::uintptr_t>(start);
    start += (kHugePageBytes - address % kHugePageBytes) % kHugePageBytes;
    advise_huge_pages(start, total);
  }
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    tensors.push_back(
        Tensor::borrow(start + offsets[i], specs[i].shape, specs[i].dtype, Device::CPU, block));
  }
  return tensors;
}

Tensor Tensor::borrow(void* data, const Shape& shape, DType dtype, Device device,
                      std::shared_ptr<const void> keep_alive) {
  Tensor t;
  t.numel_ = checked_numel(shape);
  check_whole_blocks(shape, dtype);
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.buffer_ = std::make_shared<Buffer>(data, t.nbytes(), device, std::move(keep_alive));
  return t;
}

std::int64_t Tensor::dim(int i) const {
  const int r = rank();
  const int index = i < 0 ? i + r : i;
  if (index < 0 || index >= r) {
    throw Error("tensor",
                "dim " + std::to_string(i) + " out of range for shape " + shape_string(shape_));
  }
  return shape_[static_cast<std::size_t>(index)];
}

template <>
float* Tensor::data<float>() const {
  check(dtype_ == DType::F32, "tensor",
        [&] { return "data<float>() on a " + std::string(dtype_name(dtype_)) + " tensor"; });
  return static_cast<float*>(raw_data());
}

template <>
std::uint16_t* Tensor::data<std::uint16_t>() const {
  check(dtype_ == DType::F16 || dtype_ == DType::BF16, "tensor",
        [&] { return "data<uint16_t>() on a " + std::string(dtype_name(dtype_)) + " tensor"; });
  return static_cast<std::uint16_t*>(raw_data());
}

template <>
std::int32_t* Tensor::data<std::int32_t>() const {
  check(dtype_ == DType::I32, "tensor",
        [&] { return "data<int32_t>() on a " + std::string(dtype_name(dtype_)) + " tensor"; });
  return static_cast<std::int32_t*>(raw_data());
}

Tensor Tensor::reshape(const Shape& shape) const {
  const std::int64_t n = checked_numel(shape);
  check(n == numel_, "tensor",
        [&] { return "cannot reshape " + shape_string(shape_) + " to " + shape_string(shape); });
  check_whole_blocks(shape, dtype_);
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::slice_rows(std::int64_t begin, std::int64_t end) const {
  check(rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0], "tensor", [&] {
    return "rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of range for " +
           shape_string(shape_);
  });
  const std::int64_t row_elements = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.numel_ = row_elements * (end - begin);
  check_whole_blocks(t.shape_, dtype_);  // a rank-1 q8_0 tensor's rows are single values
  t.offset_ += storage_bytes(dtype_, begin * row_elements);
  return t;
}

Tensor Tensor::to_dtype(DType dtype, Allocator& allocator) const {
  check(device() == Device::CPU, "tensor", "to_dtype() is implemented for cpu only");
  Tensor t = empty(shape_, dtype, allocator);
  convert_elements(raw_data(), dtype_, t.raw_data(), dtype, static_cast<std::size_t>(numel_));
  return t;
}

}  // namespace attnscope
