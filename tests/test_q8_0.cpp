// q8_0: the dtype and its storage, the format's quantizer against its error model, and the cpu
// linear kernels (ops/cpu/linear_q8_0.h) at every cpu level this machine has, against float64.
//
// Rounding model: u = 2^-24 (f32); rounding_gamma(n) = n u / (1 - n u) bounds the relative
// error of n chained f32 roundings (Higham, Accuracy and Stability of Numerical Algorithms, 3.1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "cpu_levels.h"
#include "ops/cast.h"
#include "ops/cpu/linear_q8_0.h"
#include "ops/cpu/output_blocks.h"
#include "reference_ops.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "runtime/q8_0.h"
#include "runtime/tensor.h"

using namespace attnscope;
using testing::kUnitRoundoff;
using testing::levels_of_this_cpu;

namespace {

double rounding_gamma(double n) { return n * kUnitRoundoff / (1.0 - n * kUnitRoundoff); }

std::vector<float> normal_values(std::int64_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<BlockQ8_0> quantized(const std::vector<float>& x) {
  std::vector<BlockQ8_0> blocks(x.size() / kQ8_0BlockElements);
  quantize_q8_0(x.data(), blocks.data(), static_cast<std::int64_t>(x.size()));
  return blocks;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The dtype and tensors of it
// ---------------------------------------------------------------------------------------------

TEST_CASE("q8_0 is a dtype with a name and a size per block, not per element") {
  CHECK(parse_dtype("q8_0") == DType::Q8_0);
  CHECK(dtype_name(DType::Q8_0) == "q8_0");
  CHECK(block_elements(DType::Q8_0) == 32);
  CHECK(block_elements(DType::BF16) == 1);
  CHECK(storage_bytes(DType::Q8_0, 0) == 0);
  CHECK(storage_bytes(DType::Q8_0, 96) == 3 * 34);
  CHECK(storage_bytes(DType::F16, 5) == 10);
  CHECK(storage_bytes(DType::F32, 5) == 20);
  CHECK_THROWS_WITH_AS(storage_bytes(DType::Q8_0, 33), doctest::Contains("whole blocks of 32"),
                       Error);
  CHECK_THROWS_WITH_AS(dtype_size(DType::Q8_0), doctest::Contains("storage_bytes"), Error);
  CHECK_FALSE(is_float_dtype(DType::Q8_0));
  CHECK_THROWS_WITH_AS(parse_dtype("q4_0"), doctest::Contains("q8_0"), Error);
}

TEST_CASE("q8_0 tensors are whole blocks per row: bytes, slices, reshapes and conversions") {
  Context ctx(1);
  CHECK_THROWS_WITH_AS(Tensor::empty({3, 48}, DType::Q8_0, ctx.allocator()),
                       doctest::Contains("blocks of 32"), Error);
  Tensor t = Tensor::zeros({3, 64}, DType::Q8_0, ctx.allocator());
  CHECK(t.nbytes() == 3 * 2 * 34);
  const Tensor rows = t.slice_rows(1, 3);
  CHECK(rows.nbytes() == 2 * 2 * 34);
  CHECK(static_cast<char*>(rows.raw_data()) - static_cast<char*>(t.raw_data()) == 2 * 34);
  CHECK(t.reshape({6, 32}).nbytes() == t.nbytes());
  CHECK_THROWS_AS(t.reshape({64, 3}), Error);
  CHECK_THROWS_AS(t.reshape({192}).slice_rows(0, 5), Error);  // rank 1: a row is one value
  CHECK_THROWS_AS(t.data<float>(), Error);

  // zeros() is q8_0's zero (scale 0, every q 0); f32 -> q8_0 -> f32 goes through the format.
  std::mt19937 rng(3);
  Tensor x = Tensor::empty({3, 64}, DType::F32, ctx.allocator());
  const std::vector<float> values = normal_values(3 * 64, rng);
  std::copy(values.begin(), values.end(), x.data<float>());
  const Tensor back = t.to_dtype(DType::F32, ctx.allocator());
  CHECK(std::all_of(back.data<float>(), back.data<float>() + 192, [](float v) { return v == 0; }));
  Tensor q = x.to_dtype(DType::Q8_0, ctx.allocator());
  ops::cast(ctx, x, t);
  CHECK(std::memcmp(q.raw_data(), t.raw_data(), t.nbytes()) == 0);
  const std::vector<BlockQ8_0> expected = quantized(values);
  CHECK(std::memcmp(q.raw_data(), expected.data(), q.nbytes()) == 0);
  Tensor widened = Tensor::empty({3, 64}, DType::F32, ctx.allocator());
  ops::cast(ctx, q, widened);
  std::vector<float> dequantized(192);
  dequantize_q8_0(expected.data(), dequantized.data(), 192);
  CHECK(std::equal(dequantized.begin(), dequantized.end(), widened.data<float>()));

  const Tensor half = x.to_dtype(DType::BF16, ctx.allocator());
  CHECK_THROWS_WITH_AS(half.to_dtype(DType::Q8_0, ctx.allocator()),
                       doctest::Contains("q8_0 converts only from and to f32"), Error);
}

// ---------------------------------------------------------------------------------------------
// The format (runtime/q8_0.h)
// ---------------------------------------------------------------------------------------------

TEST_CASE("q8_0 scales are the smallest f16 values with 127 d >= max|x|") {
  for (float max_abs : {0.0f, 1e-30f, 1e-5f, 0.3f, 1.0f, 127.0f, 1000.0f, 65504.0f * 127.0f}) {
    const std::uint16_t scale = q8_0_scale(max_abs);
    CAPTURE(max_abs);
    CHECK(127.0 * f16_to_f32(scale) >= max_abs);
    if (scale > 0) CHECK(127.0 * f16_to_f32(static_cast<std::uint16_t>(scale - 1)) < max_abs);
  }
  CHECK(q8_0_scale(0.0f) == 0);
  CHECK(f16_to_f32(q8_0_scale(127.0f)) == 1.0f);  // exactly representable: not rounded up
}

TEST_CASE("q8_0 round trip: every value within d/2 of its original, d at most one f16 step up") {
  // |x - d q| <= d/2: q is exactly the nearest integer to x / d (runtime/q8_0.h), and d q is
  // exact in f32. d >= max|x| / 127 by construction, and the f16 value below d is not: d is at
  // most one f16 step above max|x| / 127 (a factor 1 + 2^-10 for normal f16 values; the spread
  // 1e-3 gives subnormal scales, whose steps are 2^-24).
  std::mt19937 rng(5);
  for (float spread : {1e-3f, 1.0f, 300.0f}) {
    const std::vector<float> x = normal_values(32 * 200, rng, spread);
    const std::vector<BlockQ8_0> blocks = quantized(x);
    std::vector<float> back(x.size());
    dequantize_q8_0(blocks.data(), back.data(), static_cast<std::int64_t>(x.size()));
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const double d = f16_to_f32(blocks[b].scale);
      double max_abs = 0.0;
      for (std::size_t i = 0; i < 32; ++i) {
        const std::size_t k = b * 32 + i;
        max_abs = std::max(max_abs, std::fabs(double(x[k])));
        REQUIRE(std::fabs(double(x[k]) - back[k]) <= d / 2);
        REQUIRE(back[k] == float(d * blocks[b].q[i]));
        REQUIRE(std::abs(int(blocks[b].q[i])) <= 127);
      }
      REQUIRE(d * 127 >= max_abs);
      const auto below = static_cast<std::uint16_t>(blocks[b].scale - 1);
      REQUIRE((blocks[b].scale == 0 || 127.0 * f16_to_f32(below) < max_abs));
      if (d >= 0x1.0p-14) REQUIRE(d <= max_abs / 127 * (1 + 0x1.0p-10));
    }
  }
}

TEST_CASE("q8_0 exact cases: zeros, one large value, +-127 extremes, ties to even") {
  std::vector<float> x(64, 0.0f);
  // Block 1: scale exactly 1 (max 127), so q = x rounded to the nearest integer, ties to even.
  const float block1[] = {127.0f, -127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 126.49f};
  std::copy(std::begin(block1), std::end(block1), x.begin() + 32);
  const std::vector<BlockQ8_0> blocks = quantized(x);
  CHECK(blocks[0].scale == 0);
  CHECK(std::all_of(std::begin(blocks[0].q), std::end(blocks[0].q), [](auto q) { return q == 0; }));
  CHECK(f16_to_f32(blocks[1].scale) == 1.0f);
  const int expected[] = {127, -127, 0, 2, 2, 0, -2, 126};
  for (int i = 0; i < 8; ++i) CHECK(int(blocks[1].q[i]) == expected[i]);
  for (int i = 8; i < 32; ++i) CHECK(int(blocks[1].q[i]) == 0);

  // One large value among small ones: it keeps 1/254 relative accuracy, the small ones become 0.
  std::vector<float> spike(32, 1e-3f);
  spike[17] = -1000.0f;
  const std::vector<BlockQ8_0> spiked = quantized(spike);
  const float d = f16_to_f32(spiked[0].scale);
  CHECK(d == 7.875f);  // 1000 / 127 = 7.874...; the f16 values near it are 2^-8 apart
  CHECK(int(spiked[0].q[17]) == -127);
  CHECK(int(spiked[0].q[0]) == 0);
}

TEST_CASE("q8_0 refuses partial blocks and values it cannot hold") {
  std::vector<float> x(64, 1.0f);
  std::vector<BlockQ8_0> blocks(2);
  CHECK_THROWS_WITH_AS(quantize_q8_0(x.data(), blocks.data(), 33), doctest::Contains("33"), Error);
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e10f}) {
    x[40] = bad;
    CHECK_THROWS_WITH_AS(quantize_q8_0(x.data(), blocks.data(), 64), doctest::Contains("index 40"),
                         Error);
  }
}

// ---------------------------------------------------------------------------------------------
// The kernels (ops/cpu/linear_q8_0.h)
// ---------------------------------------------------------------------------------------------

TEST_CASE("activation quantization: within dx/2 + |x| rounding_gamma(3) of x; NaN blocks poison") {
  // dx = fl(max/127), inverse = fl(127/max), t = fl(x inverse): dx t = x (1+e1)(1+e2)(1+e3) with
  // |ei| <= u, so |x - dx t| <= |x| rounding_gamma(3), and q = round(t) adds |t - q| <= 1/2 times
  // dx.
  std::mt19937 rng(11);
  const std::vector<float> x = normal_values(32 * 100, rng, 2.0f);
  std::vector<std::int8_t> q(x.size());
  std::vector<float> scales(x.size() / 32);
  ops::cpu::quantize_activations_q8_0(x.data(), q.data(), scales.data(), std::int64_t(x.size()));
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double dx = scales[k / 32];
    REQUIRE(std::fabs(double(x[k]) - dx * q[k]) <=
            dx / 2 + std::fabs(double(x[k])) * rounding_gamma(3));
    REQUIRE(std::abs(int(q[k])) <= 127);
  }
  std::vector<float> poisoned(64, 1.0f);
  poisoned[3] = std::numeric_limits<float>::infinity();
  std::fill(poisoned.begin() + 32, poisoned.end(), 0.0f);
  ops::cpu::quantize_activations_q8_0(poisoned.data(), q.data(), scales.data(), 64);
  CHECK(std::isnan(scales[0]));
  CHECK(scales[1] == 0.0f);
  CHECK(q[32] == 0);
}

TEST_CASE("activation quantization: every cpu level gives the portable loop's bytes and scales") {
  // The avx512 levels quantize 16 lanes at a time (ops/cpu/linear_q8_0.cpp); the portable loop
  // is the spec. Blocks that probe each step: normal values; ties (max 127: inverse 1, so
  // x.5 rounds to even); zeros and -0; subnormals; the largest finite floats; an infinity, a NaN
  // and a -infinity in otherwise ordinary blocks.
  std::mt19937 rng(13);
  std::vector<float> x = normal_values(32 * 40, rng, 3.0f);
  auto block = [&](int index) { return x.begin() + 32 * index; };
  block(1)[0] = 127.0f;
  for (int i = 1; i < 32; ++i) block(1)[i] = static_cast<float>(i - 16) + 0.5f;
  std::fill(block(2), block(3), 0.0f);
  block(2)[5] = -0.0f;
  for (int i = 0; i < 32; ++i) block(3)[i] = static_cast<float>(i - 15) * 1e-42f;
  for (int i = 0; i < 32; ++i)
    block(4)[i] = (i % 2 ? -1.0f : 1.0f) * std::numeric_limits<float>::max();
  block(5)[17] = std::numeric_limits<float>::infinity();
  block(6)[31] = std::numeric_limits<float>::quiet_NaN();
  block(7)[0] = -std::numeric_limits<float>::infinity();
  const auto n = static_cast<std::int64_t>(x.size());
  auto quantize_at = [&](CpuLevel level) {
    set_cpu_level_cap(level);
    std::vector<std::int8_t> q(x.size());
    std::vector<float> scales(x.size() / 32);
    ops::cpu::quantize_activations_q8_0(x.data(), q.data(), scales.data(), n);
    return std::pair{q, scales};
  };
  const auto [spec_bytes, spec_scales] = quantize_at(CpuLevel::Portable);
  CHECK(std::isnan(spec_scales[5]));
  CHECK(std::isnan(spec_scales[6]));
  CHECK(std::isnan(spec_scales[7]));
  CHECK(spec_bytes[32 + 1] == -14);  // -14.5 * 1 rounds to even
  CHECK(spec_bytes[32 + 2] == -14);  // -13.5 too
  // Subnormal values: 127 / max overflows, so the block is zeros with scale 0 (linear_q8_0.cpp).
  CHECK(spec_scales[3] == 0.0f);
  CHECK(std::all_of(spec_bytes.begin() + 3 * 32, spec_bytes.begin() + 4 * 32,
                    [](std::int8_t q) { return q == 0; }));
  CHECK(std::abs(int(spec_bytes[4 * 32])) == 127);  // +-FLT_MAX: the largest values quantize
  for (CpuLevel level : levels_of_this_cpu()) {
    CAPTURE(cpu_level_name(level));
    const auto [bytes, scales] = quantize_at(level);
    CHECK(bytes == spec_bytes);
    // Bit patterns: NaN == NaN is false, and -0 == 0 is true.
    CHECK(std::memcmp(scales.data(), spec_scales.data(), scales.size() * sizeof(float)) == 0);
  }
  set_cpu_level_cap(std::nullopt);
}

namespace {

struct LinearCase {
  std::int64_t rows, in, outputs;
  bool bias, accumulate;
};

// Checks one call of linear_q8_0 at the current cpu level against two float64 references.
//  1. The same quantized operands (decode, and prefill at the avx512vnni level: dequantized
//     weights times quantized activations; other prefill and the avx2 level's decode in lanes:
//     dequantized weights times the f32 activations), evaluated in float64. The kernel differs
//     from it only by f32 rounding: every product passes through at most one rounding for the
//     scale dw dx, one for its product, one per block (quantized activations: at most K/32) or
//     term (f32 activations: at most K) added after it, 4 for the reduction of the lanes, and
//     one each for the AVX-512 tail, the bias and the accumulation: |error| <=
//     rounding_gamma(path + 10) (sum of |terms| + |b| + |y0|), path = K/32 (quantized
//     activations) or K (f32 activations). At the amx level prefill runs on bf16 tiles with x
//     and the weights each split in two bf16 parts (ops/cpu/gemm_amx.cpp): 3K products whose
//     magnitudes sum to at most (1 + 2^-6) |x w^|, path = 3K, plus 2^-16 (3 + 2^-7) sum |x w^|
//     for the bits the parts do not hold.
//  2. The original f32 weights and activations: add the quantization errors,
//     |x w - x^ w^| <= |x - x^| |w| + |x^| |w - w^|, with |w - w^| <= dw/2 and, in decode,
//     |x - x^| <= dx/2 + |x| rounding_gamma(3) where x is quantized (the quantizer's bound above).
// Returns the largest error / bound against each reference.
std::pair<double, double> check_linear(const LinearCase& c, std::mt19937& rng) {
  Context ctx(2);
  const std::vector<float> x = normal_values(c.rows * c.in, rng);
  const std::vector<float> w = normal_values(c.outputs * c.in, rng, 0.05f);
  const std::vector<float> b = normal_values(c.outputs, rng);
  const std::vector<float> y0 = normal_values(c.rows * c.outputs, rng);
  const std::vector<BlockQ8_0> wq = quantized(w);
  std::vector<float> w_hat(w.size());
  dequantize_q8_0(wq.data(), w_hat.data(), std::int64_t(w.size()));

  const bool decode = c.rows < ops::cpu::gemm_min_rows(cpu_level(), DType::Q8_0);
  // The decode kernels (but the avx2 level's lanes) and the avx512vnni prefill GEMM
  // (ops/cpu/gemm_q8_0_vnni.cpp) quantize x.
  const bool quantized_x = ops::cpu::q8_0_quantizes_x(cpu_level(), c.rows);
  std::vector<double> x_hat(x.begin(), x.end());  // what the kernel multiplies, exactly
  std::vector<double> dx(x.size() / 32, 0.0);
  if (quantized_x) {
    std::vector<std::int8_t> qx(x.size());
    std::vector<float> scales(dx.size());
    ops::cpu::quantize_activations_q8_0(x.data(), qx.data(), scales.data(), std::int64_t(x.size()));
    for (std::size_t k = 0; k < x.size(); ++k) x_hat[k] = double(scales[k / 32]) * qx[k];
    std::copy(scales.begin(), scales.end(), dx.begin());
  }

  const bool on_tiles = !decode && cpu_level() >= CpuLevel::Amx;
  const std::int64_t path = quantized_x ? c.in / 32 : on_tiles ? 3 * c.in : c.in;
  const double parts_magnitude = on_tiles ? 1.0 + 0x1.0p-6 : 1.0;
  const double split_unit = on_tiles ? 0x1.0p-16 * (3.0 + 0x1.0p-7) : 0.0;
  std::vector<float> y = y0;
  ops::cpu::linear_q8_0(ctx, x.data(), wq.data(), c.bias ? b.data() : nullptr, y.data(), c.rows,
                        c.in, c.outputs, c.accumulate);

  double worst_same = 0.0, worst_original = 0.0;  // error / bound, reported below
  for (std::int64_t r = 0; r < c.rows; ++r) {
    for (std::int64_t o = 0; o < c.outputs; ++o) {
      const double y_start = c.accumulate ? y0[r * c.outputs + o] : 0.0;
      const double bias = c.bias ? b[o] : 0.0;
      double same = y_start + bias, original = y_start + bias;
      double magnitude = std::fabs(y_start) + std::fabs(bias), products = 0.0;
      double quantization = 0.0;
      for (std::int64_t k = 0; k < c.in; ++k) {
        const std::size_t xi = r * c.in + k, wi = o * c.in + k;
        same += x_hat[xi] * w_hat[wi];
        original += double(x[xi]) * w[wi];
        products += std::fabs(x_hat[xi] * w_hat[wi]);
        const double dw = f16_to_f32(wq[wi / 32].scale);
        const double x_error =
            quantized_x ? dx[xi / 32] / 2 + std::fabs(x[xi]) * rounding_gamma(3) : 0.0;
        quantization += x_error * std::fabs(w[wi]) + std::fabs(x_hat[xi]) * dw / 2;
      }
      magnitude += parts_magnitude * products;
      const double arithmetic =
          rounding_gamma(double(path + 10)) * magnitude + split_unit * products;
      const double actual = y[r * c.outputs + o];
      REQUIRE(std::fabs(actual - same) <= arithmetic);
      REQUIRE(std::fabs(actual - original) <= arithmetic + quantization);
      worst_same = std::max(worst_same, std::fabs(actual - same) / arithmetic);
      worst_original =
          std::max(worst_original, std::fabs(actual - original) / (arithmetic + quantization));
    }
  }
  return {worst_same, worst_original};
}

}  // namespace

TEST_CASE("linear_q8_0 matches float64 at every cpu level, decode and prefill") {
  std::mt19937 rng(17);
  for (CpuLevel level : levels_of_this_cpu()) {
    set_cpu_level_cap(level);
    double worst_same = 0.0, worst_original = 0.0;
    // 130 rows: the GEMM at every level (gemm_min_rows, ops/cpu/output_blocks.h: at most 128).
    // At avx512vnni, 6 to 127 rows put the input rows in the lanes (q8_0_decode_in_lanes): the
    // fewest rows, a partial tile, a full one, three with a last row alone, four. At avx2 from 16
    // rows the f32 lanes (decode_lanes_avx2.h): 16 one tile of 2 vectors of 8 rows, 33 tiles of
    // 1, 2 and 2, 64 four of 2; below 16 groups of 4 rows (four_row_dots_avx2) and a rest of 1
    // to 3 (5, 6, 9).
    for (std::int64_t rows : {1, 2, 5, 6, 9, 16, 33, 64, 130}) {
      // 1, 2, 3, 5, 9, 18 blocks: AVX-512 steps of 4, a last pair, an odd last block
      for (std::int64_t in : {32, 64, 96, 160, 288, 576}) {
        CAPTURE(cpu_level_name(level));
        CAPTURE(rows);
        CAPTURE(in);
        for (const LinearCase& c : {LinearCase{rows, in, 67, rows % 2 == 1, rows % 3 != 0},
                                    LinearCase{rows, in, 131, rows % 2 == 0, rows % 3 == 0}}) {
          const auto [same, original] = check_linear(c, rng);
          worst_same = std::max(worst_same, same);
          worst_original = std::max(worst_original, original);
        }
      }
    }
    // Prefill with more outputs than one 512-row panel per thread (2 threads: 576 each).
    const auto [same, original] = check_linear({130, 64, 1151, true, true}, rng);
    worst_same = std::max(worst_same, same);
    worst_original = std::max(worst_original, original);
    MESSAGE(cpu_level_name(level) << ": largest error / bound " << worst_same
                                  << " against the same quantized operands, " << worst_original
                                  << " against the f32 operands");
  }
  set_cpu_level_cap(std::nullopt);
}

TEST_CASE("linear_q8_0 gives every level, decode and prefill, the same integer products") {
  // The levels and paths differ only in the order of the f32 sum over blocks: with one block
  // (K = 32) there is no such sum, and with integer inputs and exactly representable scales the
  // results agree bit for bit, whether x is quantized (decode, prefill at avx512vnni) or not.
  std::mt19937 rng(23);
  constexpr std::int64_t kOutputs = 37;  // a panel of 32 and a partial one
  std::vector<float> w = normal_values(kOutputs * 32, rng);
  // Every block's scale becomes 1: products and sums are integers.
  for (std::int64_t o = 0; o < kOutputs; ++o) w[o * 32] = 127.0f;
  const std::vector<BlockQ8_0> wq = quantized(w);
  // decode one weight row at a time (7: at avx2 a group of 4 rows and one of 3), in the lanes at
  // avx512vnni, and the GEMM at every level
  for (std::int64_t rows : {3, 7, 20, 130}) {
    CAPTURE(rows);
    std::vector<float> x = normal_values(rows * 32, rng, 40.0f);
    for (float& value : x) value = std::clamp(std::nearbyint(value), -127.0f, 127.0f);
    for (std::int64_t r = 0; r < rows; ++r) x[r * 32] = 127.0f;
    Context ctx(2);
    std::vector<std::vector<float>> results;
    for (CpuLevel level : levels_of_this_cpu()) {
      set_cpu_level_cap(level);
      std::vector<float> y(static_cast<std::size_t>(rows * kOutputs));
      ops::cpu::linear_q8_0(ctx, x.data(), wq.data(), nullptr, y.data(), rows, 32, kOutputs, false);
      results.push_back(y);
    }
    set_cpu_level_cap(std::nullopt);
    for (const std::vector<float>& y : results) CHECK(y == results.front());
  }
}

TEST_CASE("linear_q8_0: the avx512vnni kernel equals the avx512 kernel bit for bit") {
  // vpdpbusd forms the same integer sums of 4 byte products as vpmaddubsw + vpmaddwd, and
  // everything after them runs in the same order: any difference is a bug in one of them.
  set_cpu_level_cap(std::nullopt);
  if (cpu_level() < CpuLevel::Avx512Vnni) {
    MESSAGE("SKIPPED: this CPU has no AVX-512 VNNI (level " << cpu_level_name(cpu_level()) << ")");
    return;
  }
  std::mt19937 rng(29);
  constexpr std::int64_t kIn = 27 * 32, kOutputs = 70;  // 6 steps of 4 blocks, a pair, one block
  // Up to 5 rows one weight row at a time; from 6 on avx512vnni puts the rows in the lanes
  // (q8_0_decode_in_lanes), which sums in another order. (The groups of 6 to 8 rows of the
  // avx512vnni kernel run at amx only, where the float64 test above runs groups of 6 and 8.)
  REQUIRE_FALSE(ops::cpu::q8_0_decode_in_lanes(CpuLevel::Avx512Vnni, 5));
  for (std::int64_t rows : {1, 2, 3, 4, 5}) {
    CAPTURE(rows);
    const std::vector<float> x = normal_values(rows * kIn, rng);
    const std::vector<BlockQ8_0> wq = quantized(normal_values(kOutputs * kIn, rng));
    const std::vector<float> b = normal_values(kOutputs, rng);
    Context ctx(2);
    std::vector<std::vector<float>> results;
    for (CpuLevel level : {CpuLevel::Avx512, CpuLevel::Avx512Vnni}) {
      set_cpu_level_cap(level);
      std::vector<float> y(static_cast<std::size_t>(rows * kOutputs));
      ops::cpu::linear_q8_0(ctx, x.data(), wq.data(), b.data(), y.data(), rows, kIn, kOutputs,
                            false);
      results.push_back(y);
    }
    CHECK(results[0] == results[1]);
  }
  set_cpu_level_cap(std::nullopt);
}

TEST_CASE("linear_q8_0 refuses an input width that is not whole blocks") {
  Context ctx(1);
  std::vector<float> x(48), y(2);
  std::vector<BlockQ8_0> w(4);
  CHECK_THROWS_WITH_AS(
      ops::cpu::linear_q8_0(ctx, x.data(), w.data(), nullptr, y.data(), 1, 48, 2, false),
      doctest::Contains("multiple of 32, got 48"), Error);
}
