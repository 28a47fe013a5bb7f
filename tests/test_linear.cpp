// ops::linear on the cpu with f32 weights in the prefill GEMM (ops/cpu/gemm.cpp) and with bf16
// and f16 weights (ops/cpu/linear_16bit.cpp), at every kernel level this CPU has, against float64
// references with bounds from the rounding model.
//
// Rounding model (Higham, Accuracy and Stability of Numerical Algorithms, 3.1): with unit
// roundoff u = 2^-24 for f32 and gamma_n = n u / (1 - n u), a sum of n terms computed in f32 in
// any order (with or without FMA) is within gamma_n sum |term| of the exact sum. One output is
// y0 (accumulate) + b + sum_k x_k w_k: K products and at most two more additions, so
//   |y - exact| <= gamma_{K+2} (sum_k |x_k w_k| + |b| + |y0|).
// With f32 weights, and with 16-bit weights against their rounded values w~ (widening is exact),
// that is the whole bound.
// Against the original f32 weights w, storing w~ = w (1 + d) + e adds sum_k |x_k| (u_w |w_k| + e)
// with u_w = 2^-8 (bf16 keeps 8 significant bits) or 2^-11 (f16: 11), and e the absolute error of
// f16's subnormals, 2^-25 (half their spacing; bf16 has f32's range and no such term).
// At the amx level f16 prefill multiplies x split in two bf16 parts that keep 16 of its 24 bits
// (ops/cpu/gemm_amx.cpp), and the tiles round each pair of products and then its sum into y:
// w~ = w_hi + w_lo exactly and 3K products (x_lo w_lo dropped), so gamma_{3K+2}, plus
// 2^-15 (1 + 2^-9) sum_k |x_k w~_k|. The parts' products sum to at most (1 + 2^-6) |x_k w~_k|
// in magnitude, which scales the products in gamma's term.
// bf16 weights at the avx512bf16 level from 5 rows on, and in the amx level's prefill
// (ops/cpu/output_blocks.h: bf16_linear_rounds_x), round x to bf16 and multiply the pairs x~ w~
// exactly, summing in f32: against the operands it multiplies, gamma_{K+2} as with f32; against
// the f32 x, x~ = x (1 + d) with |d| <= 2^-8 adds 2^-8 sum_k |x_k w~_k| to both comparisons.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "cpu_levels.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/output_blocks.h"
#include "ops/embedding.h"
#include "ops/linear.h"
#include "reference_ops.h"
#include "runtime/cpu_features.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

using namespace attnscope;
using testing::for_each_cpu_level;
using testing::random_tensor;

namespace {

double gamma(std::int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(n) * u / (1.0 - static_cast<double>(n) * u);
}

struct Case {
  std::int64_t rows, in, outputs;
};

// Runs one linear (or linear_residual) with weights stored as `dtype` and checks every output
// against both references. `weight` is the f32 original; the kernel sees it rounded to `dtype`.
void check_linear(Context& ctx, const Case& c, DType dtype, bool with_bias, bool accumulate,
                  std::mt19937& rng) {
  CAPTURE(c.rows);
  CAPTURE(c.in);
  CAPTURE(c.outputs);
  CAPTURE(with_bias);
  CAPTURE(accumulate);
  const Tensor x = random_tensor({c.rows, c.in}, rng, ctx.allocator());
  const Tensor weight = random_tensor({c.outputs, c.in}, rng, ctx.allocator());
  const Tensor bias = with_bias ? random_tensor({c.outputs}, rng, ctx.allocator()) : Tensor();
  const Tensor stored = weight.to_dtype(dtype, ctx.allocator());
  const Tensor rounded = stored.to_dtype(DType::F32, ctx.allocator());
  Tensor y = random_tensor({c.rows, c.outputs}, rng, ctx.allocator());
  const std::vector<double> y0 = testing::to_double(y);

  if (accumulate) {
    ops::linear_residual(ctx, x, stored, bias, y);
  } else {
    ops::linear(ctx, x, stored, bias, y);
  }

  const double unit = dtype == DType::BF16  ? std::ldexp(1.0, -8)
                      : dtype == DType::F16 ? std::ldexp(1.0, -11)
                                            : 0.0;
  const double subnormal = dtype == DType::F16 ? std::ldexp(1.0, -25) : 0.0;
  // From gemm_min_rows rows on linear runs its prefill path (ops/cpu/output_blocks.h).
  const bool prefill = c.rows >= ops::cpu::gemm_min_rows(cpu_level(), dtype);
  // f16 prefill on AMX tiles: x and the weights in two bf16 parts each (see the top).
  const bool split = dtype == DType::F16 && cpu_level() >= CpuLevel::Amx && prefill;
  const bool rounds_x = dtype == DType::BF16 && ops::cpu::bf16_linear_rounds_x(cpu_level(), c.rows);
  const double x_unit = rounds_x ? std::ldexp(1.0, -8) : 0.0;
  const std::int64_t products_per_input = split ? 3 : 1;
  const double split_unit = split ? std::ldexp(1.0, -15) * (1.0 + std::ldexp(1.0, -9)) : 0.0;
  const double parts_magnitude = split ? 1.0 + std::ldexp(1.0, -6) : 1.0;
  const float* xs = x.data<float>();
  const float* w = weight.data<float>();
  const float* w_rounded = rounded.data<float>();
  int failures = 0;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    for (std::int64_t o = 0; o < c.outputs; ++o) {
      const std::size_t i = static_cast<std::size_t>(r * c.outputs + o);
      double base = with_bias ? bias.data<float>()[o] : 0.0;
      double magnitude = std::fabs(base);
      if (accumulate) {
        base += y0[i];
        magnitude += std::fabs(y0[i]);
      }
      double exact_rounded = base, exact_original = base, storage_error = 0.0, products = 0.0;
      for (std::int64_t k = 0; k < c.in; ++k) {
        const double xk = xs[r * c.in + k];
        const double xk_multiplied = rounds_x ? bf16_to_f32(f32_to_bf16(xs[r * c.in + k])) : xk;
        exact_rounded += xk_multiplied * w_rounded[o * c.in + k];
        exact_original += xk * w[o * c.in + k];
        products += std::fabs(xk * w_rounded[o * c.in + k]);
        storage_error += std::fabs(xk) * (unit * std::fabs(w[o * c.in + k]) + subnormal);
      }
      magnitude += parts_magnitude * products;
      // x~'s products are within 2^-8 of x's: the rounded sum's terms, and x's rounding error.
      const double accumulation_bound =
          gamma(products_per_input * c.in + 2) * magnitude * (1.0 + x_unit) + split_unit * products;
      storage_error += x_unit * products;
      const double got = y.data<float>()[i];
      const bool ok = std::fabs(got - exact_rounded) <= accumulation_bound &&
                      std::fabs(got - exact_original) <= accumulation_bound + storage_error;
      if (!ok && failures++ < 3) {
        CAPTURE(r);
        CAPTURE(o);
        CHECK(std::fabs(got - exact_rounded) <= accumulation_bound);
        CHECK(std::fabs(got - exact_original) <= accumulation_bound + storage_error);
      }
    }
  }
  CHECK(failures == 0);
}

// Runs `body(dtype)` for bf16 and for f16 weights, at every kernel level this CPU has.
template <typename Body>
void for_each_16bit_dtype_at_every_cpu_level(Body body) {
  for_each_cpu_level([&] {
    for (DType dtype : {DType::BF16, DType::F16}) {
      CAPTURE(dtype_name(dtype));
      body(dtype);
    }
  });
}

}  // namespace

TEST_CASE("linear with f32 weights: the prefill GEMM at every cpu level, edges and blocks") {
  std::mt19937 rng(14);
  for_each_cpu_level([&] {
    Context ctx(2);
    for (bool with_bias : {false, true}) {
      for (bool accumulate : {false, true}) {
        // 16 rows: one whole 14-row tile and an edge of 2 (avx2: two 6-row tiles and an edge of
        // 4); 130 outputs: thread blocks of 96 (three 32-column panels) and 34 (a panel and an
        // edge of 2; avx2: 16-column panels); K 67: one partial depth slice (a tail of 3 values
        // past the last 16, or 8 at avx2).
        check_linear(ctx, {16, 67, 130}, DType::F32, with_bias, accumulate, rng);
        // K 520: depth slices of 256, 256 and 8; 130 rows: row blocks of 112 and 18 (avx2: 96
        // and 34).
        check_linear(ctx, {130, 520, 75}, DType::F32, with_bias, accumulate, rng);
      }
    }
    // One thread, 2100 x 2100 weights (17.6 MB): packed in three column blocks of at most 8 MB,
    // with the fewest rows the level's GEMM takes (fewer go to the decode kernels).
    Context one_thread(1);
    const std::int64_t gemm_rows = ops::cpu::gemm_min_rows(cpu_level(), DType::F32);
    check_linear(one_thread, {gemm_rows, 2100, 2100}, DType::F32, true, false, rng);
  });
}

TEST_CASE("linear with f32 weights: decode rows 1..127 at every cpu level") {
  Context ctx(2);
  std::mt19937 rng(13);
  for_each_cpu_level([&] {
    // Up to gemm_min_rows (ops/cpu/output_blocks.h: 48 at the avx512 levels, 128 at avx2) the
    // decode tiles, in tiles of up to 8 (avx512) or 6 (avx2) rows, shared out evenly, but at avx2
    // from 12 rows the input rows in the lanes (ops/cpu/decode_lanes_avx2.h: 13 and 14 one tile
    // of two vectors, 23 and 37 an odd vector of their own, 127 eight tiles); the GEMM from there
    // on.
    for (std::int64_t rows :
         {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 23, 37, 47, 63, 64, 127}) {
      // K 67: whole rounds of 16 and a masked tail; 131 outputs: thread blocks of 96 and 35 (an
      // odd one); rows 9..16 in two tiles at the avx512 levels, 23 in three, 47 in six.
      check_linear(ctx, {rows, 67, 131}, DType::F32, rows % 2 == 1, rows % 3 == 0, rng);
      check_linear(ctx, {rows, 768, 70}, DType::F32, rows % 2 == 0, rows % 4 == 1, rng);
      // K 57: one round of 32, then a tail of 25 in two masked steps (one whole, one of 9).
      check_linear(ctx, {rows, 57, 70}, DType::F32, rows % 2 == 1, rows % 2 == 0, rng);
    }
  });
}

TEST_CASE("linear: a row decoded alone equals the same row decoded beside one or two others") {
  // From the avx512 level on, 1 row in streams (dot_block_avx512) and 2 or 3 rows one weight row
  // at a time against every input row (dot_rows_avx512) keep the same accumulators per row and
  // sum them in the same order, for f32 and 16-bit weights alike, so a sequence's logits do not
  // depend on how many others share its decode step. (At the avx2 level one row's streams and the
  // tiles of more sum in other orders.)
  Context ctx(2);
  std::mt19937 rng(15);
  for_each_cpu_level([&] {
    if (cpu_level() < CpuLevel::Avx512) return;
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      CAPTURE(dtype_name(dtype));
      const Tensor x = random_tensor({3, 200}, rng, ctx.allocator());
      const Tensor weight =
          random_tensor({70, 200}, rng, ctx.allocator()).to_dtype(dtype, ctx.allocator());
      const Tensor bias = random_tensor({70}, rng, ctx.allocator());
      Tensor together = Tensor::empty({3, 70}, DType::F32, ctx.allocator());
      ops::linear(ctx, x, weight, bias, together);
      for (std::int64_t r = 0; r < 3; ++r) {
        CAPTURE(r);
        Tensor alone = Tensor::empty({1, 70}, DType::F32, ctx.allocator());
        ops::linear(ctx, x.slice_rows(r, r + 1), weight, bias, alone);
        CHECK(std::equal(alone.data<float>(), alone.data<float>() + 70,
                         together.data<float>() + r * 70));
      }
    }
  });
}

TEST_CASE("linear with bf16 and f16 weights: decode rows 1..127 at every level") {
  Context ctx(2);
  std::mt19937 rng(15);
  for_each_16bit_dtype_at_every_cpu_level([&](DType dtype) {
    // Up to gemm_min_rows (ops/cpu/output_blocks.h: 128 at avx2 and the avx512 levels, but 48
    // for bf16 at avx512bf16, whose tiles from 5 rows on take x in bf16) the decode kernels; 127
    // rows: 16 tiles of 7 and 8. At avx2 from 16 rows the input rows in the lanes
    // (ops/cpu/decode_lanes_avx2.h), each group of weight rows widened first; 131 outputs leave
    // the second thread's last group with 11 of its 12 rows.
    for (std::int64_t rows :
         {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 23, 37, 63, 127}) {
      // K 67: no multiple of 8, 16 or 32, so every kernel runs its tail; 131 outputs: two
      // thread blocks, the second partial and odd (a tile's last weight row without a twin).
      check_linear(ctx, {rows, 67, 131}, dtype, rows % 2 == 1, rows % 3 == 0, rng);
    }
    // 96 and 131: the avx512 kernel's whole rounds of 32, then (131) a masked tail of 3; 57:
    // a tail of 25, in two masked steps.
    for (std::int64_t in : {1, 7, 16, 32, 33, 57, 96, 131, 768}) {
      for (bool accumulate : {false, true}) {
        check_linear(ctx, {1, in, 70}, dtype, true, accumulate, rng);
        check_linear(ctx, {3, in, 70}, dtype, true, accumulate, rng);
        check_linear(ctx, {5, in, 70}, dtype, false, accumulate, rng);
      }
    }
  });
}

TEST_CASE("linear with bf16 and f16 weights: prefill from gemm_min_rows on, at every cpu level") {
  Context ctx(2);
  std::mt19937 rng(16);
  for_each_16bit_dtype_at_every_cpu_level([&](DType dtype) {
    // The first row count the prefill GEMM takes (16 to 128 by level: ops/cpu/output_blocks.h),
    // and one more: from the avx512 level on, the GEMM's weight panels widened as they are
    // packed, with masked tails (K 67, 33), edge columns (130, 45) and a last row block.
    const std::int64_t rows = ops::cpu::gemm_min_rows(cpu_level(), dtype);
    for (bool with_bias : {false, true}) {
      for (bool accumulate : {false, true}) {
        check_linear(ctx, {rows, 67, 130}, dtype, with_bias, accumulate, rng);
        check_linear(ctx, {rows + 1, 33, 45}, dtype, with_bias, accumulate, rng);
      }
    }
    // A wide row (4000 bytes widened) over several depth slices: each thread's 350 weight rows
    // in one block.
    check_linear(ctx, {rows + 3, 1000, 700}, dtype, true, true, rng);
  });
}

TEST_CASE("linear with bf16 and f16 weights on AMX tiles: padding, thread blocks and panels") {
  set_cpu_level_cap(std::nullopt);
  if (cpu_level() != CpuLevel::Amx) {
    MESSAGE("SKIPPED: this CPU (or its OS) gives no AMX tiles (level "
            << cpu_level_name(cpu_level()) << ")");
    return;
  }
  Context ctx(2);
  std::mt19937 rng(17);
  for (DType dtype : {DType::BF16, DType::F16}) {
    CAPTURE(dtype_name(dtype));
    // The fewest rows that take the tiles (16 for bf16, 24 for f16: ops/cpu/output_blocks.h).
    const std::int64_t fewest = ops::cpu::gemm_min_rows(CpuLevel::Amx, dtype);
    // fewest + 15 rows: a padded last block of 32 (31 rows of 32, or 39 of 64). K 4096: panels
    // of 16 MiB of tiles hold 2048 outputs (bf16) or 1024 (f16, two parts), so each thread's
    // outputs (2112 and 2088) take whole panels and one of 64 or 40.
    check_linear(ctx, {fewest + 15, 4096, 4200}, dtype, true, false, rng);
    // 600 rows: a pass of 512 and one of 88.
    check_linear(ctx, {600, 67, 70}, dtype, true, true, rng);
    // 300 rows of K 4096: x's tiles in chunks of 1 MiB (128 rows for bf16, 64 for f16), the last
    // one partial.
    check_linear(ctx, {300, 4096, 40}, dtype, true, true, rng);
    // K 1 and 15: one step of inputs, nearly all padding.
    check_linear(ctx, {fewest, 1, 40}, dtype, false, true, rng);
    check_linear(ctx, {fewest, 15, 40}, dtype, true, true, rng);
  }
}

TEST_CASE("embedding widens a bf16 or f16 token table exactly on the cpu") {
  Context ctx(1);
  std::mt19937 rng(17);
  const Tensor tokens = random_tensor({10, 37}, rng, ctx.allocator());
  const Tensor positions = random_tensor({6, 37}, rng, ctx.allocator());
  const std::vector<std::int32_t> ids = {3, 9, 0};
  const std::vector<std::int64_t> at = {5, 0, 2};
  for (DType dtype : {DType::BF16, DType::F16}) {
    const Tensor narrow = tokens.to_dtype(dtype, ctx.allocator());
    const Tensor widened = narrow.to_dtype(DType::F32, ctx.allocator());
    Tensor out = Tensor::empty({3, 37}, DType::F32, ctx.allocator());
    ops::embedding(ctx, narrow, positions, ids, at, out);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      for (std::int64_t c = 0; c < 37; ++c) {
        // One f32 addition of two f32 values, as with an f32 table: bitwise equal.
        CHECK(out.data<float>()[static_cast<std::int64_t>(i) * 37 + c] ==
              widened.data<float>()[ids[i] * 37 + c] + positions.data<float>()[at[i] * 37 + c]);
      }
    }
  }
}

TEST_CASE("16-bit weights on the cpu need f32 activations; other weight dtypes are refused") {
  Context ctx(1);
  const Tensor x = Tensor::zeros({2, 3}, DType::F32, ctx.allocator());
  const Tensor x16 = Tensor::zeros({2, 3}, DType::BF16, ctx.allocator());
  const Tensor w16 = Tensor::zeros({4, 3}, DType::BF16, ctx.allocator());
  const Tensor w_ids = Tensor::zeros({4, 3}, DType::I32, ctx.allocator());
  const Tensor b16 = Tensor::zeros({4}, DType::BF16, ctx.allocator());
  Tensor y = Tensor::zeros({2, 4}, DType::F32, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::linear(ctx, x16, w16, Tensor(), y), doctest::Contains("must be f32"),
                       Error);
  CHECK_THROWS_WITH_AS(ops::linear(ctx, x, w_ids, Tensor(), y),
                       doctest::Contains("must be one of f32 bf16 f16"), Error);
  CHECK_THROWS_WITH_AS(ops::linear(ctx, x, w16, b16, y), doctest::Contains("bias must be f32"),
                       Error);
}
