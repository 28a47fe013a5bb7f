#include "runtime/dtype.h"

#include <bit>
#include <cstring>
#include <string>

#include "runtime/error.h"
#include "runtime/q8_0.h"

namespace attnscope {

std::size_t dtype_size(DType t) {
  check(t != DType::Q8_0, "dtype",
        "q8_0 has no per-element size: its 32-value blocks take 34 bytes (use storage_bytes)");
  return t == DType::F32 || t == DType::I32 ? 4 : 2;
}

std::int64_t block_elements(DType t) { return t == DType::Q8_0 ? kQ8_0BlockElements : 1; }

std::size_t storage_bytes(DType t, std::int64_t elements) {
  check(elements >= 0, "dtype", "negative element count " + std::to_string(elements));
  if (t != DType::Q8_0) return static_cast<std::size_t>(elements) * dtype_size(t);
  check(elements % kQ8_0BlockElements == 0, "dtype", [&] {
    return "q8_0 stores whole blocks of " + std::to_string(kQ8_0BlockElements) + " values; " +
           std::to_string(elements) + " is not a multiple";
  });
  return static_cast<std::size_t>(elements / kQ8_0BlockElements) * sizeof(BlockQ8_0);
}

bool is_float_dtype(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

namespace {

// Each dtype's name, its PyTorch spelling where it has one, and whether a user may ask for it
// (i32 holds token ids only): one table for dtype_name and parse_dtype.
struct NamedDType {
  DType dtype;
  std::string_view name;
  std::string_view torch_name;
  bool parsed;
};
constexpr NamedDType kDTypeNames[] = {{DType::F32, "f32", "float32", true},
                                      {DType::F16, "f16", "float16", true},
                                      {DType::BF16, "bf16", "bfloat16", true},
                                      {DType::I32, "i32", "", false},
                                      {DType::Q8_0, "q8_0", "", true}};

}  // namespace

std::string_view dtype_name(DType t) {
  for (const NamedDType& named : kDTypeNames) {
    if (named.dtype == t) return named.name;
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  std::string valid;
  for (const NamedDType& named : kDTypeNames) {
    if (!named.parsed) continue;
    if (name == named.name || (!named.torch_name.empty() && name == named.torch_name)) {
      return named.dtype;
    }
    valid += (valid.empty() ? "" : ", ") + std::string(named.name);
  }
  throw Error("dtype", "unknown dtype '" + std::string(name) + "' (valid: " + valid + ")");
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  std::uint32_t bits = 0;
  if (exponent == 0x1F) {  // infinity or NaN: keep the payload
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // signed zero
    bits = sign;
  } else {  // subnormal: shift until the leading 1 becomes the implicit bit
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t f32_to_f16(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);   // NaN (quiet)
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (abs < 0x33000001u) return sign;  // below half the smallest subnormal: zero
  const std::uint32_t exponent = abs >> 23;
  std::uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;  // with the implicit bit
  // Number of low mantissa bits to drop: 13 for normals, more for f16 subnormals.
  const std::uint32_t shift = exponent < 113 ? 13 + (113 - exponent) : 13;
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t dropped = mantissa & ((1u << shift) - 1);
  std::uint32_t kept = mantissa >> shift;
  if (dropped > half || (dropped == half && (kept & 1u))) ++kept;      // round to nearest even
  if (exponent < 113) return static_cast<std::uint16_t>(sign | kept);  // subnormal (may carry)
  // Normal: kept holds the implicit bit at 1 << 10; a carry moves it to 1 << 11 and the sum
  // below then bumps the exponent, which is exactly right.
  const std::uint32_t result = ((exponent - 112) << 10) + (kept - 0x400u);
  return static_cast<std::uint16_t>(sign | result);
}

float bf16_to_f32(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: keep it a (quiet) NaN
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  }
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);  // nearest, ties to even
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

namespace {

float load_as_f32(const void* src, DType from, std::size_t i) {
  if (from == DType::F32) return static_cast<const float*>(src)[i];
  const std::uint16_t raw = static_cast<const std::uint16_t*>(src)[i];
  return from == DType::F16 ? f16_to_f32(raw) : bf16_to_f32(raw);
}

void store_from_f32(void* dst, DType to, std::size_t i, float value) {
  if (to == DType::F32) {
    static_cast<float*>(dst)[i] = value;
  } else {
    static_cast<std::uint16_t*>(dst)[i] = to == DType::F16 ? f32_to_f16(value) : f32_to_bf16(value);
  }
}

}  // namespace

void convert_elements(const void* src, DType from, void* dst, DType to, std::size_t n) {
  if (from == to) {
    if (n != 0) std::memmove(dst, src, storage_bytes(from, static_cast<std::int64_t>(n)));
    return;
  }
  const bool q8_0_and_f32 =
      (from == DType::Q8_0 && to == DType::F32) || (from == DType::F32 && to == DType::Q8_0);
  check(q8_0_and_f32 || (is_float_dtype(from) && is_float_dtype(to)), "dtype",
        "cannot convert between " + std::string(dtype_name(from)) + " and " +
            std::string(dtype_name(to)) + " (q8_0 converts only from and to f32)");
  if (to == DType::Q8_0) {
    quantize_q8_0(static_cast<const float*>(src), static_cast<BlockQ8_0*>(dst),
                  static_cast<std::int64_t>(n));
    return;
  }
  if (from == DType::Q8_0) {
    dequantize_q8_0(static_cast<const BlockQ8_0*>(src), static_cast<float*>(dst),
                    static_cast<std::int64_t>(n));
    return;
  }
  for (std::size_t i = 0; i < n; ++i) store_from_f32(dst, to, i, load_as_f32(src, from, i));
}

}  // namespace attnscope
