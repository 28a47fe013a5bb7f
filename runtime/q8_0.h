// q8_0: 8-bit block-quantized weights, after llama.cpp's q8_0 (the same 34-byte block layout).
//
// A row of K values (K a multiple of 32) is cut into blocks of 32. Each block stores one scale d
// and 32 signed bytes q, and stands for the values d * q[i]:
//   d = max|x| / 127 of the block, rounded UP to the next f16 value;  q[i] = round(x[i] / d).
// Why an f16 scale: the block is then 2 + 32 = 34 bytes, 8.5 bits per weight against 9 with an
// f32 scale: decode is bound by reading the weights, so 6% fewer bytes is 6% faster, and the
// layout is GGUF's q8_0. The f16 scale costs nothing in accuracy because it is rounded up before
// the q[i] are computed from it (llama.cpp computes q from the unrounded d, which adds up to
// 127 f16 rounding steps of d to the error): d >= max|x| / 127 keeps every q[i] in [-127, 127].
//
// Error model (the tests check it): each stored value d q[i] is within d / 2 of x[i], and d is
// at most one f16 step above max|x| / 127 (a factor 1 + 2^-10 unless d is an f16 subnormal,
// below 2^-14). The relative error of a block's largest value is thus about 1/254 at most;
// a value k times smaller than the block's largest loses up to k/254. The
// quotient x[i] / d is formed in double: x[i] has 24 significant bits and d 11, so x[i] / d is
// either exactly a half-integer or at least 2^-26 away from one, while double's rounding moves
// it by less than 2^-46: q[i] is exactly the nearest integer (ties to even). d q[i] (11 by 7
// bits) is exact in f32, so dequantizing adds no error.
// Limits: every value finite and max|x| <= 65504 * 127 (the largest f16 scale); otherwise Error.
//
// Cost: quantizing reads 4 bytes and writes 1.0625 per value, once at load; dequantizing the
// reverse.
#pragma once

#include <cstdint>

namespace attnscope {

constexpr std::int64_t kQ8_0BlockElements = 32;

struct BlockQ8_0 {
  std::uint16_t scale;  // f16 bits of d
  std::int8_t q[kQ8_0BlockElements];
};
static_assert(sizeof(BlockQ8_0) == 34, "q8_0 blocks are 34 bytes, with no padding");

// The f16 scale of a block whose largest magnitude is `max_abs` (finite, at most 65504 * 127):
// the smallest f16 value d with 127 d >= max_abs.
std::uint16_t q8_0_scale(float max_abs);

// Quantizes n values (n a multiple of 32) into n / 32 blocks. Throws Error, before writing
// anything, when n is not a multiple of 32 or a value is not finite or too large.
void quantize_q8_0(const float* x, BlockQ8_0* blocks, std::int64_t n);
// Writes the n values (n a multiple of 32, else Error) that n / 32 blocks stand for.
void dequantize_q8_0(const BlockQ8_0* blocks, float* x, std::int64_t n);

}  // namespace attnscope
