// ops/cpu/element_rows.h's bulk conversions against runtime/dtype.h's and runtime/q8_0.h's own, at
// every cpu level this machine runs: widening exact, narrowing bit for bit (an f16 NaN only
// staying a NaN), across ties, subnormals, infinities, values past f16's range, and every tail
// length; q8_0 blocks bit for bit, a block q8_0 cannot hold read back as NaN.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cpu_levels.h"
#include "ops/cpu/element_rows.h"
#include "runtime/error.h"
#include "runtime/q8_0.h"

using namespace attnscope;

namespace {

// Values that take every branch of the scalar conversions: ties to even for both formats, f16
// subnormals and underflow, f16 overflow (65504 and the first value that rounds past it), bf16
// subnormals, infinities, NaNs, signed zeros; then random values of many magnitudes.
std::vector<float> hard_values() {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -2.5f,
                               std::bit_cast<float>(0x3F808000u),  // bf16 tie, kept bit 0: down
                               std::bit_cast<float>(0x3F818000u),  // bf16 tie, kept bit 1: up
                               std::bit_cast<float>(0x3F801000u),  // f16 tie, kept bit 0: down
                               std::bit_cast<float>(0x3F803000u),  // f16 tie, kept bit 1: up
                               65504.0f,
                               65520.0f,  // rounds past f16's largest: infinity
                               -1e6f,
                               6e-8f,   // f16 subnormal
                               2e-8f,   // below half f16's smallest subnormal: zero
                               1e-40f,  // f32 (and bf16) subnormal
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               std::bit_cast<float>(0xFF812345u)};  // a signalling NaN
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-30, 20);
  while (values.size() < 200) values.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  return values;
}

}  // namespace

TEST_CASE("narrow_16bit and widen_16bit convert as the scalar conversions do, at every level") {
  const std::vector<float> values = hard_values();
  testing::for_each_cpu_level([&] {
    for (DType format : {DType::F16, DType::BF16}) {
      CAPTURE(dtype_name(format));
      // Every length up to 40 covers whole vectors of 8 and 16 and every tail.
      for (std::int64_t n : {1, 7, 8, 15, 16, 17, 31, 33, 40, 200}) {
        CAPTURE(n);
        std::vector<std::uint16_t> narrowed(static_cast<std::size_t>(n) + 1, 0xABCD);
        ops::cpu::narrow_16bit(values.data(), format, n, narrowed.data());
        CHECK(narrowed.back() == 0xABCD);  // nothing written past n
        std::vector<float> widened(static_cast<std::size_t>(n) + 1, -7.0f);
        ops::cpu::widen_16bit(narrowed.data(), format, n, widened.data());
        CHECK(widened.back() == -7.0f);
        for (std::int64_t i = 0; i < n; ++i) {
          const auto at = static_cast<std::size_t>(i);
          const std::uint16_t expected =
              format == DType::BF16 ? f32_to_bf16(values[at]) : f32_to_f16(values[at]);
          const float expected_wide =
              format == DType::BF16 ? bf16_to_f32(narrowed[at]) : f16_to_f32(narrowed[at]);
          CAPTURE(values[at]);
          if (std::isnan(values[at])) {
            CHECK(std::isnan(widened[at]));
          } else {
            CHECK(narrowed[at] == expected);
            CHECK(std::bit_cast<std::uint32_t>(widened[at]) ==
                  std::bit_cast<std::uint32_t>(expected_wide));
          }
        }
      }
    }
  });
}

TEST_CASE("quantize_q8_0_rows makes quantize_q8_0's blocks; one it refuses reads back as NaN") {
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> values(32 * 40);
  for (float& v : values) v = normal(rng);
  std::fill_n(values.begin() + 32, 32, 0.0f);  // an all-zero block: scale 0
  values[64 + 5] = 127.0f * 2.5f;              // the block's largest: its scale d is 2.5 exactly
  values[64 + 6] = 6.25f;                      // then x / d = 2.5, a tie: rounds to 2
  values[96 + 7] = std::numeric_limits<float>::quiet_NaN();
  values[128 + 31] = std::numeric_limits<float>::infinity();
  values[160] = 65504.0f * 128.0f;  // past the largest scale
  testing::for_each_cpu_level([&] {
    std::vector<BlockQ8_0> blocks(40), expected(1);
    ops::cpu::quantize_q8_0_rows(values.data(), 32 * 40, blocks.data());
    std::vector<float> back(values.size());
    ops::cpu::dequantize_q8_0_rows(blocks.data(), 32 * 40, back.data());
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      CAPTURE(b);
      if (b == 3 || b == 4 || b == 5) {
        for (std::size_t i = 0; i < 32; ++i) CHECK(std::isnan(back[32 * b + i]));
        continue;
      }
      quantize_q8_0(values.data() + 32 * b, expected.data(), 32);
      CHECK(blocks[b].scale == expected[0].scale);
      CHECK(std::equal(blocks[b].q, blocks[b].q + 32, expected[0].q));
      std::vector<float> one(32);
      dequantize_q8_0(expected.data(), one.data(), 32);
      CHECK(std::equal(one.begin(), one.end(), back.begin() + static_cast<std::ptrdiff_t>(32 * b)));
    }
  });
  float value = 1.0f;
  BlockQ8_0 block{};
  CHECK_THROWS_WITH_AS(ops::cpu::quantize_q8_0_rows(&value, 1, &block),
                       doctest::Contains("not whole blocks of 32"), Error);
}

TEST_CASE("the 16-bit conversions refuse a format that is not 16 bits") {
  float value = 1.0f;
  std::uint16_t bits = 0;
  CHECK_THROWS_WITH_AS(ops::cpu::narrow_16bit(&value, DType::F32, 1, &bits),
                       doctest::Contains("converts f16 or bf16, not f32"), Error);
  CHECK_THROWS_WITH_AS(ops::cpu::widen_16bit(&bits, DType::Q8_0, 1, &value),
                       doctest::Contains("converts f16 or bf16, not q8_0"), Error);
}
