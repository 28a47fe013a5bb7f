// Element types and conversions between them.
//
// f32: IEEE binary32. f16: IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits; max 65504).
// bf16: the top 16 bits of a binary32 (8 exponent bits, 7 mantissa bits: f32's range, ~3
// significant digits). Narrowing rounds to nearest, ties to even; NaN stays NaN; values beyond
// f16's range become infinity. Widening is exact.
// i32: 32-bit signed integers, for token ids and positions on a device (never a model dtype; it
// converts to nothing else).
// q8_0: 8-bit weights in blocks of 32 values sharing one f16 scale, 34 bytes per block
// (runtime/q8_0.h defines the format and its error model). A block has no per-element size:
// storage_bytes() counts its bytes, and every q8_0 tensor's rows are whole blocks. It converts
// only from f32 (quantizing) and to f32 (dequantizing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attnscope {

enum class DType : std::uint8_t { F32, F16, BF16, I32, Q8_0 };

// Bytes per element; throws Error for q8_0, whose bytes only whole blocks have (storage_bytes).
std::size_t dtype_size(DType t);
// Bytes that `elements` values of `t` occupy. For q8_0 `elements` must be a multiple of 32 (the
// block), else Error.
std::size_t storage_bytes(DType t, std::int64_t elements);
// Values per block that shares a scale: 32 for q8_0, 1 for every other dtype.
std::int64_t block_elements(DType t);
// f32, f16 or bf16: the dtypes that element-wise ops read and write.
bool is_float_dtype(DType t);
std::string_view dtype_name(DType t);      // "f32", "f16", "bf16", "i32", "q8_0"
DType parse_dtype(std::string_view name);  // accepts "f32", "f16", "bf16", "q8_0"; else Error

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);
float bf16_to_f32(std::uint16_t b);
std::uint16_t f32_to_bf16(float f);

// Converts n elements from `src` (of type `from`) into `dst` (of type `to`). Buffers must not
// overlap unless from == to. Throws Error when one side is i32 and the other is not, when one
// side is q8_0 and the other is not f32, and (runtime/q8_0.h) when f32 values cannot be quantized.
void convert_elements(const void* src, DType from, void* dst, DType to, std::size_t n);

}  // namespace attnscope
