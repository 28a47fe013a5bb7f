// The flash backend beyond the generic backend tests in test_ops.cpp: lengths around its tile
// boundaries, the split-KV decode path, thread counts, and its cost model against measurement.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cpu_levels.h"
#include "ops/attention/flash.h"
#include "ops/attention/registry.h"
#include "profiler/cpu_tracer.h"
#include "reference_ops.h"
#include "runtime/error.h"

using namespace attnscope;
using testing::max_relative_error;
using testing::random_tensor;

namespace {

struct FlashCase {
  std::int64_t batch, q_heads, kv_heads, q_len, kv_len, capacity, head_dim;
  bool bf16_products = false;  // Call::bf16_products
};

const ops::attention::Backend& flash() { return ops::attention::find_backend("flash"); }

ops::attention::Call random_call(const FlashCase& c, std::mt19937& rng, Allocator& allocator) {
  ops::attention::Call call;
  call.q = random_tensor({c.batch, c.q_heads, c.q_len, c.head_dim}, rng, allocator);
  call.k = random_tensor({c.batch, c.kv_heads, c.capacity, c.head_dim}, rng, allocator);
  call.v = random_tensor({c.batch, c.kv_heads, c.capacity, c.head_dim}, rng, allocator);
  call.out = Tensor::empty(call.q.shape(), DType::F32, allocator);
  std::fill_n(call.out.data<float>(), call.out.numel(), NAN);  // unwritten outputs show up
  call.kv_len = c.kv_len;
  call.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  call.bf16_products = c.bf16_products;
  return call;
}

// Runs flash on `call` and returns its largest error against float64 attention.
double flash_error(Context& ctx, const ops::attention::Call& call) {
  flash().attend(ctx, call);
  const auto expected =
      testing::reference_attention(call.q, call.k, call.v, call.kv_len, call.scale);
  return max_relative_error(call.out, expected, 1.0);
}

// The names of the scopes flash opens directly inside its own scope.
std::vector<std::string> direct_steps(Context& ctx, const ops::attention::Call& call) {
  profiler::CpuTracer tracer;
  ctx.set_profiler(&tracer);
  flash().attend(ctx, call);
  ctx.set_profiler(nullptr);
  std::vector<std::string> names;
  for (const profiler::Event& e : tracer.events()) {
    if (e.depth == 1) names.push_back(e.name);
  }
  return names;
}

const std::vector<std::string> kTiledSteps = {"flash.tiled"};
const std::vector<std::string> kSplitSteps = {"flash.split_kv_partials", "flash.split_kv_combine"};

}  // namespace

TEST_CASE("flash matches float64 attention at lengths around its 64 x 256 tiles") {
  std::mt19937 rng(11);
  Context ctx(2);
  std::vector<FlashCase> cases;
  for (std::int64_t t : {1, 2, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300}) {
    cases.push_back({1, 2, 1, t, t, t, 64});  // prefill, grouped-query heads
  }
  // New rows against a longer cache, several query tiles, key ends between tile boundaries;
  // (300, 310) has query tiles whose first rows see no key of the last key tile.
  for (auto [q_len, kv_len] : {std::pair<std::int64_t, std::int64_t>{130, 400},
                               {64, 320},
                               {200, 513},
                               {300, 310},
                               {9, 700},
                               {65, 65}}) {
    cases.push_back({2, 2, 2, q_len, kv_len, kv_len + 3, 64});
  }
  for (std::int64_t d : {1, 16, 33, 96, 128}) cases.push_back({1, 3, 3, 70, 90, 90, d});
  for (const FlashCase& c : cases) {
    CAPTURE(c.q_len);
    CAPTURE(c.kv_len);
    CAPTURE(c.head_dim);
    CHECK(flash_error(ctx, random_call(c, rng, ctx.allocator())) < 1e-5);
  }
}

TEST_CASE("flash's decode rows match float64 at every cpu level, in kernels and in Eigen") {
  // One query row goes through decode_row's kernels from the avx2 level on when the head dim is
  // a multiple of 16 (ops/attention/cpu/decode_row.h), through Eigen's products otherwise: key
  // counts around the kernels' 8 or 16 keys at a time and flash's key tiles of 256; head dims of 1
  // to 8 vectors of 16 (one slice of the avx512 values kernel), of 9 (two slices), and 80 and 128
  // (two slices of the avx2 kernel's 8 vectors of 8).
  std::mt19937 rng(13);
  Context ctx(2);
  testing::for_each_cpu_level([&] {
    for (std::int64_t d : {16, 32, 48, 64, 80, 128, 144, 33}) {
      for (std::int64_t kv_len : {1, 15, 16, 17, 255, 257}) {
        CAPTURE(d);
        CAPTURE(kv_len);
        const FlashCase c{2, 3, 3, 1, kv_len, kv_len + 1, d};
        CHECK(flash_error(ctx, random_call(c, rng, ctx.allocator())) < 1e-5);
      }
    }
  });
}

TEST_CASE("flash's query tiles match float64 at every cpu level, in kernels and in Eigen") {
  // Two query rows or more go through query_tile's kernels from the avx2 level on when the head
  // dim is a multiple of 16 up to 256 (ops/attention/cpu/query_tile.h), through Eigen's products
  // otherwise: row counts around its tiles of 12 and 6 rows, key counts around its groups of 8,
  // 16 and 32 keys, head dims of 1 to 4 vectors of 16 and of several 16- and 64-column chunks.
  std::mt19937 rng(17);
  Context ctx(2);
  testing::for_each_cpu_level([&] {
    for (std::int64_t d : {16, 48, 64, 96, 256, 272, 33}) {
      for (auto [q_len, kv_len] :
           {std::pair<std::int64_t, std::int64_t>{2, 2}, {13, 13}, {7, 24}, {12, 45}, {70, 70}}) {
        const FlashCase c{1, 2, 2, q_len, kv_len, kv_len, d};
        CAPTURE(c.head_dim);
        CAPTURE(c.q_len);
        CAPTURE(c.kv_len);
        CHECK(flash_error(ctx, random_call(c, rng, ctx.allocator())) < 1e-5);
      }
    }
  });
}

TEST_CASE("with bf16 products, flash rounds q, k, v and p to bf16 on AMX tiles, and only there") {
  // Call::bf16_products lets flash multiply on AMX's bf16 tiles (ops/attention/cpu/
  // query_tile_amx.cpp) where its plan says so: at the amx level, for query tiles of enough rows
  // and head dims that are multiples of 32. Against float64 attention of q, k and v rounded to
  // bf16, only p's rounding then remains: at most 2^-8 sum_j p_j |v_j| / sum_j p_j per output,
  // which float64 attention of |v| gives. Everywhere else the flag changes nothing. Row counts
  // around the tiles' 32-row blocks and the 64-row query tiles, keys around the 32-key groups and
  // the 256-key tiles, grouped-query heads, a cache longer than kv_len.
  std::mt19937 rng(19);
  Context ctx(2);
  std::vector<FlashCase> cases;
  for (std::int64_t d : {32, 64, 128, 256, 48}) {
    for (auto [q_len, kv_len] : {std::pair<std::int64_t, std::int64_t>{16, 16},
                                 {31, 31},
                                 {33, 33},
                                 {65, 65},
                                 {100, 100},
                                 {257, 257},
                                 {130, 400},
                                 {300, 310},
                                 {9, 700}}) {
      cases.push_back({1, 4, 2, q_len, kv_len, kv_len + 3, d});
    }
  }
  int amx_calls = 0;
  testing::for_each_cpu_level([&] {
    for (const FlashCase& c : cases) {
      CAPTURE(c.head_dim);
      CAPTURE(c.q_len);
      CAPTURE(c.kv_len);
      ops::attention::Call call = random_call(c, rng, ctx.allocator());
      flash().attend(ctx, call);
      const std::vector<double> in_f32 = testing::to_double(call.out);
      call.bf16_products = true;
      const std::string engine = flash().plan(ctx, ops::attention::shape_of(call)).engine;
      flash().attend(ctx, call);
      if (engine.find("AMX") == std::string::npos) {
        CHECK(max_relative_error(call.out, in_f32, 1.0) == 0.0);
        continue;
      }
      ++amx_calls;
      CHECK(cpu_level() == CpuLevel::Amx);
      CHECK(max_relative_error(call.out, in_f32, 1.0) > 0.0);  // it does round
      const Tensor q = testing::rounded_to_bf16(call.q, ctx.allocator());
      const Tensor k = testing::rounded_to_bf16(call.k, ctx.allocator());
      const Tensor v = testing::rounded_to_bf16(call.v, ctx.allocator());
      const std::vector<double> expected =
          testing::reference_attention(q, k, v, call.kv_len, call.scale);
      const std::vector<double> weight = testing::reference_attention(
          q, k, testing::magnitudes(v, ctx.allocator()), call.kv_len, call.scale);
      CHECK(testing::share_of_rounded_p_bound(call.out, expected, weight, 0, expected.size()) <=
            1.0);
    }
  });
  if (testing::levels_of_this_cpu().back() == CpuLevel::Amx) {
    CHECK(amx_calls == 20);  // d 32 to 256, every case with a whole tile of 64 rows
  } else {
    MESSAGE("this CPU has no amx level: flash's AMX products not tested");
  }
}

TEST_CASE("flash takes the split-KV path for few rows against a long cache, and is exact there") {
  // Split when the (batch, head) pairs do not share out evenly among the threads: into
  // threads / gcd(pairs, threads) chunks of at least 256 keys.
  struct SplitCase {
    FlashCase shape;
    int threads;
  };
  std::mt19937 rng(12);
  // Runs flash on `c` with its thread count: the steps it takes (split-KV, which its cost model
  // predicts too, or tiled) and its error against float64.
  auto check_case = [&rng](const SplitCase& c, bool split) {
    Context ctx(c.threads);
    const ops::attention::Call call = random_call(c.shape, rng, ctx.allocator());
    CAPTURE(c.threads);
    CAPTURE(c.shape.q_heads);
    CAPTURE(c.shape.q_len);
    CAPTURE(c.shape.kv_len);
    if (split) CHECK(flash().cost_model(ctx, ops::attention::shape_of(call)).steps == 2);
    CHECK(direct_steps(ctx, call) == (split ? kSplitSteps : kTiledSteps));
    CHECK(flash_error(ctx, call) < 1e-5);
  };
  const std::vector<SplitCase> cases = {
      {{1, 2, 1, 1, 1001, 1024, 64}, 3},  // decode, odd length, grouped heads: 3 chunks
      {{1, 1, 1, 1, 512, 512, 128}, 2},   // the shortest cache that splits: 2 x 256 keys
      {{1, 3, 1, 1, 1024, 1024, 64}, 2},  // three heads of one kv head on 2 threads
      {{1, 2, 1, 3, 777, 800, 96}, 4},    // a few new tokens, 2 chunks
      {{1, 1, 1, 4, 515, 515, 64}, 3},    // the most rows that split; last key tile 2 wide
      {{2, 1, 1, 4, 2049, 2100, 16}, 3},  // batch 2, 3 chunks
  };
  for (const SplitCase& c : cases) check_case(c, true);
  // One thread, heads that share out evenly, a short cache, or many rows: no split.
  const std::vector<SplitCase> tiled = {
      {{1, 1, 1, 1, 4096, 4096, 64}, 1}, {{1, 12, 12, 1, 1024, 1024, 64}, 2},
      {{1, 2, 1, 1, 4096, 4096, 64}, 2}, {{1, 1, 1, 1, 511, 511, 64}, 2},
      {{1, 1, 1, 5, 1024, 1024, 64}, 2},
  };
  for (const SplitCase& c : tiled) check_case(c, false);
}

TEST_CASE("flash gives the same answer on 1, 2 and 3 threads") {
  std::mt19937 rng(13);
  const std::vector<FlashCase> cases = {
      {2, 4, 2, 200, 200, 200, 64},  // tiled: every task does the same sums on any thread
      {1, 1, 1, 1, 1500, 1500, 64},  // tiled on 1 thread, 2 and 3 split-KV chunks on 2 and 3
  };
  for (const FlashCase& c : cases) {
    Context ctx(1);
    const ops::attention::Call call = random_call(c, rng, ctx.allocator());
    flash().attend(ctx, call);
    const std::vector<double> one_thread = testing::to_double(call.out);
    for (int threads : {2, 3}) {
      Context other(threads);
      flash().attend(other, call);
      CAPTURE(threads);
      CAPTURE(c.q_len);
      if (c.q_len > ops::attention::kSplitKvMaxQueries) {
        CHECK(max_relative_error(call.out, one_thread, 1.0) == 0.0);
      } else {
        CHECK(max_relative_error(call.out, one_thread, 1.0) < 1e-6);
      }
    }
  }
}

TEST_CASE("flash allocates exactly the bytes its cost model states, on both paths") {
  std::mt19937 rng(14);
  int split_calls = 0;
  const std::vector<FlashCase> cases = {
      {2, 4, 2, 130, 130, 140, 64},        // tiled, several query tiles
      {2, 4, 2, 130, 130, 140, 64, true},  // at the amx level: K and V packed as bf16 tiles
      {1, 3, 3, 5, 40, 40, 33},            // tiled, tiles smaller than the defaults
      {1, 2, 1, 1, 1001, 1024, 64},        // split-KV
      {2, 1, 1, 4, 900, 900, 128},         // split-KV, several rows
      {1, 1, 1, 0, 600, 600, 64},          // no query rows at all
      {0, 2, 2, 4, 4, 4, 64},              // no batch
  };
  for (int threads : {1, 2, 3}) {
    Context ctx(threads);
    for (const FlashCase& c : cases) {
      const ops::attention::Call call = random_call(c, rng, ctx.allocator());
      const ops::attention::CostModel model =
          flash().cost_model(ctx, ops::attention::shape_of(call));
      const std::size_t before = ctx.allocator().current_bytes();
      ctx.allocator().reset_peak();
      const std::vector<std::string> steps = direct_steps(ctx, call);
      CAPTURE(threads);
      CAPTURE(c.batch);
      CAPTURE(c.q_len);
      CAPTURE(c.kv_len);
      CHECK(ctx.allocator().peak_bytes() - before == model.temporary_bytes);
      CHECK(ctx.allocator().current_bytes() == before);
      CHECK(steps.size() == static_cast<std::size_t>(model.steps));
      CHECK(steps == (model.steps == 1 ? kTiledSteps : kSplitSteps));
      split_calls += model.steps == 2 ? 1 : 0;
    }
  }
  CHECK(split_calls == 4);  // both paths were measured
}

TEST_CASE("flash refuses dtypes other than f32 on the cpu") {
  std::mt19937 rng(15);
  Context ctx(1);
  ops::attention::Call call = random_call({1, 2, 2, 4, 4, 4, 32}, rng, ctx.allocator());
  for (Tensor* t : {&call.q, &call.k, &call.v, &call.out}) {
    *t = t->to_dtype(DType::F16, ctx.allocator());
  }
  CHECK_THROWS_WITH_AS(flash().attend(ctx, call), doctest::Contains("must be f32"), Error);
}

TEST_CASE("per-row key counts (kv_lens) are refused where no backend reads them: on the cpu") {
  std::mt19937 rng(16);
  Context ctx(1);
  ops::attention::Call call = random_call({2, 2, 2, 1, 40, 40, 32}, rng, ctx.allocator());
  call.kv_lens = Tensor::empty({2}, DType::I32, ctx.allocator());
  call.kv_lens.data<std::int32_t>()[0] = 7;
  call.kv_lens.data<std::int32_t>()[1] = 40;
  for (const std::string& name : ops::attention::backend_names()) {
    CAPTURE(name);
    const ops::attention::Backend& backend = ops::attention::find_backend(name);
    CHECK_FALSE(backend.reads_row_lengths(ctx, ops::attention::shape_of(call)));
    CHECK_THROWS_WITH_AS(backend.attend(ctx, call), doctest::Contains("kv_lens"), Error);
  }
}
