// dtype conversions against exact values and against the hardware's own conversions where the
// value is exactly representable.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "runtime/dtype.h"
#include "runtime/error.h"

using namespace attnscope;

TEST_CASE("f16 decodes every bit pattern like the reference formula") {
  // value = (-1)^s * 2^(e-15) * (1 + m/1024) for normals, 2^-14 * (m/1024) for subnormals.
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const int sign = (h >> 15) ? -1 : 1;
    const int e = (h >> 10) & 0x1F;
    const int m = h & 0x3FF;
    const float decoded = f16_to_f32(h);
    if (e == 0x1F) {
      CHECK((m == 0 ? std::isinf(decoded) : std::isnan(decoded)));
      continue;
    }
    const double expected =
        e == 0 ? sign * std::ldexp(m / 1024.0, -14) : sign * std::ldexp(1.0 + m / 1024.0, e - 15);
    REQUIRE(static_cast<double>(decoded) == expected);
    CHECK(std::signbit(decoded) == (sign < 0));
  }
}

TEST_CASE("f16 encoding round-trips every finite f16 value and rounds to nearest even") {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    if (((h >> 10) & 0x1F) == 0x1F) continue;  // inf / NaN checked below
    REQUIRE(f32_to_f16(f16_to_f32(h)) == h);
  }
  CHECK(f32_to_f16(65504.0f) == 0x7BFF);           // max finite
  CHECK(f32_to_f16(65519.0f) == 0x7BFF);           // below the halfway point: stays finite
  CHECK(f32_to_f16(65520.0f) == 0x7C00);           // halfway to 2^16 rounds to even: inf
  CHECK(f32_to_f16(1e9f) == 0x7C00);               // overflow
  CHECK(f32_to_f16(-1e9f) == 0xFC00);              // negative overflow
  CHECK(f32_to_f16(1.0f + 0x1.0p-11f) == 0x3C00);  // tie between 1 and 1+2^-10: even (1)
  CHECK(f32_to_f16(1.0f + 0x1.8p-10f) == 0x3C02);  // tie between odd and even: up to even
  CHECK(f32_to_f16(0x1.0p-24f) == 0x0001);         // smallest subnormal
  CHECK(f32_to_f16(0x1.0p-25f) == 0x0000);         // exactly half of it: ties to even zero
  CHECK(f32_to_f16(0x1.8p-25f) == 0x0001);         // above half: rounds up
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("f16 encoding of random floats is the nearest f16 value") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> exponent(-26.0f, 16.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::exp2(exponent(rng)) * (rng() & 1 ? 1.0f : -1.0f);
    const float y = f16_to_f32(f32_to_f16(x));
    if (std::fabs(x) > 65504.0f) continue;
    // No f16 value is closer to x than y: check the neighbours of y's encoding.
    const std::uint16_t h = f32_to_f16(x);
    for (int delta : {-1, 1}) {
      const auto neighbour = static_cast<std::uint16_t>(h + delta);
      if (((neighbour >> 10) & 0x1F) == 0x1F) continue;
      if ((neighbour ^ h) & 0x8000) continue;  // crossed the sign
      CHECK(std::fabs(static_cast<double>(f16_to_f32(neighbour)) - x) >=
            std::fabs(static_cast<double>(y) - x));
    }
  }
}

TEST_CASE("bf16 keeps f32's range, rounds to nearest even, keeps NaN") {
  CHECK(bf16_to_f32(f32_to_bf16(1.0f)) == 1.0f);
  CHECK(f32_to_bf16(1.0f + 0x1.0p-8f) == 0x3F80);  // tie: to even (1.0)
  CHECK(f32_to_bf16(1.0f + 0x1.8p-7f) == 0x3F82);  // tie: up to even
  CHECK(f32_to_bf16(3.0e38f) == 0x7F62);
  CHECK(std::isinf(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::max()))));
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lives only in the low bits must not become infinity.
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7F800001u)))));
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    if (((b >> 7) & 0xFF) == 0xFF && (b & 0x7F)) continue;  // NaN payloads may be quietened
    REQUIRE(f32_to_bf16(bf16_to_f32(b)) == b);
  }
}

TEST_CASE("convert_elements converts arrays between every pair of dtypes") {
  const float values[] = {0.0f, -1.5f, 3.140625f, 1024.0f, -0.0078125f};
  for (DType to : {DType::F32, DType::F16, DType::BF16}) {
    std::uint8_t narrow[5 * 4];
    float back[5];
    convert_elements(values, DType::F32, narrow, to, 5);
    convert_elements(narrow, to, back, DType::F32, 5);
    for (int i = 0; i < 5; ++i) CHECK(back[i] == values[i]);  // all exactly representable
  }
}

TEST_CASE("dtype names parse and unknown names are refused") {
  CHECK(parse_dtype("bf16") == DType::BF16);
  CHECK(parse_dtype("float16") == DType::F16);
  CHECK(dtype_name(DType::F32) == "f32");
  CHECK(dtype_size(DType::BF16) == 2);
  CHECK_THROWS_AS(parse_dtype("f8"), Error);
}
