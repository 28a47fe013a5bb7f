// The q8_0 format's scalar quantizer and dequantizer (runtime/q8_0.h).
#include "runtime/q8_0.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace attnscope {

namespace {

constexpr double kLargestScale = 65504.0;  // the largest finite f16

void check_whole_blocks(std::int64_t n) {
  check(n >= 0 && n % kQ8_0BlockElements == 0, "q8_0", [&] {
    return "rows must be whole blocks of " + std::to_string(kQ8_0BlockElements) + " values, got " +
           std::to_string(n) + " values";
  });
}

}  // namespace

std::uint16_t q8_0_scale(float max_abs) {
  // Round to the nearest f16, then step up while 127 d < max_abs. Positive f16 encodings are
  // ordered like their values, so +1 is the next f16 up; 127 d is exact in double.
  std::uint16_t scale = f32_to_f16(static_cast<float>(static_cast<double>(max_abs) / 127.0));
  while (127.0 * static_cast<double>(f16_to_f32(scale)) < static_cast<double>(max_abs)) ++scale;
  return scale;
}

void quantize_q8_0(const float* x, BlockQ8_0* blocks, std::int64_t n) {
  check_whole_blocks(n);
  for (std::int64_t i = 0; i < n; ++i) {
    check(std::isfinite(x[i]) && std::fabs(x[i]) <= kLargestScale * 127.0, "q8_0", [&] {
      return "cannot quantize value " + std::to_string(x[i]) + " at index " + std::to_string(i) +
             " (q8_0 holds finite values up to 65504 * 127)";
    });
  }
  for (std::int64_t b = 0; b < n / kQ8_0BlockElements; ++b) {
    const float* values = x + b * kQ8_0BlockElements;
    float max_abs = 0.0f;
    for (std::int64_t i = 0; i < kQ8_0BlockElements; ++i) {
      max_abs = std::max(max_abs, std::fabs(values[i]));
    }
    BlockQ8_0& block = blocks[b];
    block.scale = q8_0_scale(max_abs);
    const double d = f16_to_f32(block.scale);
    for (std::int64_t i = 0; i < kQ8_0BlockElements; ++i) {
      // nearbyint rounds ties to even (the default rounding mode); |x / d| <= 127.
      block.q[i] = static_cast<std::int8_t>(d == 0.0 ? 0.0 : std::nearbyint(values[i] / d));
    }
  }
}

void dequantize_q8_0(const BlockQ8_0* blocks, float* x, std::int64_t n) {
  check_whole_blocks(n);
  for (std::int64_t b = 0; b < n / kQ8_0BlockElements; ++b) {
    const float d = f16_to_f32(blocks[b].scale);
    for (std::int64_t i = 0; i < kQ8_0BlockElements; ++i) {
      x[b * kQ8_0BlockElements + i] = d * static_cast<float>(blocks[b].q[i]);
    }
  }
}

}  // namespace attnscope
