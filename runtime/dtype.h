// Element types and conversions between them.
//
// f32: IEEE binary32. f16: IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits; max 65504).
// bf16: the top 16 bits of a binary32 (8 exponent bits, 7 mantissa bits: f32's range, ~3
// significant digits). Narrowing rounds to nearest, ties to even; NaN stays NaN; values beyond
// f16's range become infinity. Widening is exact.
// i32: 32-bit signed integers, for token ids and positions on a device (never a model dtype; it
// converts to nothing else).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attnscope {

enum class DType : std::uint8_t { F32, F16, BF16, I32 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);      // "f32", "f16", "bf16", "i32"
DType parse_dtype(std::string_view name);  // accepts "f32", "f16", "bf16"; throws Error otherwise

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);
float bf16_to_f32(std::uint16_t b);
std::uint16_t f32_to_bf16(float f);

// Converts n elements from `src` (of type `from`) into `dst` (of type `to`). Buffers must not
// overlap unless from == to. Throws Error when one side is i32 and the other is not.
void convert_elements(const void* src, DType from, void* dst, DType to, std::size_t n);

}  // namespace attnscope
