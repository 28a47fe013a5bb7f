// Paged attention over ragged batches (ops/attention/paged.h): every backend against float64
// attention of each sequence alone, block sizes from 1 to beyond the flash key tile, decode
// tokens mixed with prefill chunks behind cached positions; the allocator and profiler against
// each backend's paged cost model; ops::split_qkv_paged's slots; malformed calls refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/attention/paged.h"
#include "ops/attention/registry.h"
#include "ops/heads.h"
#include "profiler/cpu_tracer.h"
#include "reference_ops.h"
#include "runtime/error.h"

using namespace attnscope;
using testing::random_tensor;

namespace {

// A ragged call on random data: sequence s has lengths[s] = {Tq, kv_len}, and its blocks are
// drawn at random from a pool with a few to spare, so no two sequences' rows lie in order.
struct RaggedCase {
  std::int64_t q_heads, kv_heads, head_dim, block_tokens;
  std::vector<ops::attention::RaggedShape::Lengths> lengths;
};

struct RaggedCall {
  ops::attention::RaggedBatch batch;
  ops::attention::PagedCall call;
};

RaggedCall random_ragged_call(const RaggedCase& c, std::mt19937& rng, Allocator& allocator) {
  RaggedCall r;
  ops::attention::RaggedBatch& batch = r.batch;
  batch.block_tokens = c.block_tokens;
  std::int64_t blocks_needed = 0;
  for (const auto& l : c.lengths) {
    const std::int64_t blocks = (l.kv_len + c.block_tokens - 1) / c.block_tokens;
    batch.max_blocks = std::max(batch.max_blocks, blocks);
    blocks_needed += blocks;
  }
  const std::int64_t pool = blocks_needed + 3;
  std::vector<std::int32_t> free_blocks(static_cast<std::size_t>(pool));
  for (std::int32_t b = 0; b < pool; ++b) free_blocks[static_cast<std::size_t>(b)] = b;
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
  batch.query_starts.push_back(0);
  batch.block_tables.assign(c.lengths.size() * static_cast<std::size_t>(batch.max_blocks), 0);
  for (std::size_t s = 0; s < c.lengths.size(); ++s) {
    const std::int64_t blocks = (c.lengths[s].kv_len + c.block_tokens - 1) / c.block_tokens;
    for (std::int64_t b = 0; b < blocks; ++b) {
      batch.block_tables[s * static_cast<std::size_t>(batch.max_blocks) + b] = free_blocks.back();
      free_blocks.pop_back();
    }
    batch.query_starts.push_back(batch.query_starts.back() +
                                 static_cast<std::int32_t>(c.lengths[s].q_len));
    batch.kv_lens.push_back(static_cast<std::int32_t>(c.lengths[s].kv_len));
  }
  ops::attention::PagedCall& call = r.call;
  call.q = random_tensor({batch.rows(), c.q_heads, c.head_dim}, rng, allocator);
  call.key_blocks = random_tensor({pool, c.kv_heads, c.block_tokens, c.head_dim}, rng, allocator);
  call.value_blocks = random_tensor({pool, c.kv_heads, c.block_tokens, c.head_dim}, rng, allocator);
  call.out = Tensor::empty(call.q.shape(), DType::F32, allocator);
  std::fill_n(call.out.data<float>(), call.out.numel(), NAN);  // unwritten rows show up
  call.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return r;
}

// Float64 attention of each sequence alone, from its own compact copies of q, K and V (read
// here element by element through its block table), laid out as call.out is.
std::vector<double> reference_paged(const RaggedCall& r, Allocator& allocator) {
  const ops::attention::PagedCall& call = r.call;
  const ops::attention::RaggedBatch& batch = r.batch;
  const std::int64_t hq = call.q_heads(), hkv = call.kv_heads(), d = call.head_dim();
  std::vector<double> out(static_cast<std::size_t>(call.out.numel()));
  for (std::int64_t s = 0; s < batch.sequences(); ++s) {
    const std::int64_t tq = batch.q_len(s), kv_len = batch.kv_len(s), first = batch.first_row(s);
    Tensor q = Tensor::empty({1, hq, tq, d}, DType::F32, allocator);
    Tensor k = Tensor::empty({1, hkv, kv_len, d}, DType::F32, allocator);
    Tensor v = Tensor::empty({1, hkv, kv_len, d}, DType::F32, allocator);
    for (std::int64_t h = 0; h < hq; ++h) {
      for (std::int64_t t = 0; t < tq; ++t) {
        for (std::int64_t x = 0; x < d; ++x) {
          q.data<float>()[(h * tq + t) * d + x] =
              call.q.data<float>()[((first + t) * hq + h) * d + x];
        }
      }
    }
    for (std::int64_t g = 0; g < hkv; ++g) {
      for (std::int64_t p = 0; p < kv_len; ++p) {
        const std::int64_t block =
            batch.blocks(s)[static_cast<std::size_t>(p / batch.block_tokens)];
        const std::int64_t row = (block * hkv + g) * batch.block_tokens + p % batch.block_tokens;
        for (std::int64_t x = 0; x < d; ++x) {
          k.data<float>()[(g * kv_len + p) * d + x] = call.key_blocks.data<float>()[row * d + x];
          v.data<float>()[(g * kv_len + p) * d + x] = call.value_blocks.data<float>()[row * d + x];
        }
      }
    }
    const std::vector<double> one = testing::reference_attention(q, k, v, kv_len, call.scale);
    for (std::int64_t h = 0; h < hq; ++h) {
      for (std::int64_t t = 0; t < tq; ++t) {
        for (std::int64_t x = 0; x < d; ++x) {
          out[static_cast<std::size_t>(((first + t) * hq + h) * d + x)] =
              one[static_cast<std::size_t>((h * tq + t) * d + x)];
        }
      }
    }
  }
  return out;
}

const std::vector<RaggedCase>& ragged_cases() {
  static const std::vector<RaggedCase> cases = {
      // decode tokens mixed with a prefill and a prefill chunk behind 40 cached positions
      {4, 4, 32, 16, {{1, 37}, {12, 12}, {1, 1}, {9, 49}, {1, 300}}},
      // grouped heads, one-token blocks: every key in a block of its own
      {6, 2, 16, 1, {{5, 5}, {1, 20}, {3, 70}}},
      // blocks longer than flash's key tile and a chunk longer than its query tile
      {2, 1, 64, 512, {{100, 700}, {1, 513}}},
      // an odd block size across many sequences
      {3, 3, 8, 7, {{1, 8}, {1, 15}, {2, 2}, {4, 30}, {1, 7}, {6, 6}, {1, 29}}},
  };
  return cases;
}

int kernel_steps(const std::vector<profiler::Event>& events) {
  return static_cast<int>(std::count_if(events.begin(), events.end(), [](const profiler::Event& e) {
    return std::string(e.category) == "kernel";
  }));
}

}  // namespace

TEST_CASE("every backend's paged attention equals float64 attention of each sequence alone") {
  std::mt19937 rng(41);
  for (int threads : {1, 2}) {
    Context ctx(threads);
    for (const RaggedCase& c : ragged_cases()) {
      const RaggedCall r = random_ragged_call(c, rng, ctx.allocator());
      const std::vector<double> expected = reference_paged(r, ctx.allocator());
      for (const std::string& name : ops::attention::backend_names()) {
        ops::attention::PagedCall call = r.call;
        call.batch = &r.batch;
        std::fill_n(call.out.data<float>(), call.out.numel(), NAN);
        ops::attention::find_backend(name).attend_paged(ctx, call);
        CAPTURE(name);
        CAPTURE(threads);
        CAPTURE(c.block_tokens);
        CHECK(testing::max_relative_error(call.out, expected, 1.0) < 1e-5);
      }
    }
  }
}

TEST_CASE("paged attention allocates the bytes and runs the kernel steps its cost model states") {
  std::mt19937 rng(42);
  for (int threads : {1, 2}) {
    Context ctx(threads);
    for (const RaggedCase& c : ragged_cases()) {
      const RaggedCall r = random_ragged_call(c, rng, ctx.allocator());
      for (const std::string& name : ops::attention::backend_names()) {
        const ops::attention::Backend& backend = ops::attention::find_backend(name);
        ops::attention::PagedCall call = r.call;
        call.batch = &r.batch;
        profiler::CpuTracer tracer;
        ctx.set_profiler(&tracer);
        const std::size_t before = ctx.allocator().current_bytes();
        ctx.allocator().reset_peak();
        backend.attend_paged(ctx, call);
        ctx.set_profiler(nullptr);
        const ops::attention::CostModel model =
            backend.paged_cost_model(ctx, ops::attention::ragged_shape_of(call));
        CAPTURE(name);
        CAPTURE(threads);
        CAPTURE(c.block_tokens);
        CHECK(ctx.allocator().peak_bytes() - before == model.temporary_bytes);
        CHECK(kernel_steps(tracer.events()) == model.steps);
        // The useful FLOPs are the contiguous calls' of each sequence alone.
        double flops = 0;
        for (std::size_t s = 0; s < c.lengths.size(); ++s) {
          const auto shape = ops::attention::ragged_shape_of(call).sequence(s);
          flops += ops::attention::cost_of(shape, 0, 0).flops;
        }
        CHECK(model.flops == doctest::Approx(flops));
      }
    }
  }
}

TEST_CASE(
    "split_qkv_paged hands out each row's queries and writes its keys and values at its slot") {
  Context ctx(2);
  std::mt19937 rng(43);
  const std::int64_t heads = 4, kv_heads = 2, d = 8, block_tokens = 4, blocks = 5, rows = 6;
  const Tensor qkv = random_tensor({rows, (heads + 2 * kv_heads) * d}, rng, ctx.allocator());
  Tensor q = Tensor::empty({rows, heads, d}, DType::F32, ctx.allocator());
  Tensor key_blocks =
      Tensor::zeros({blocks, kv_heads, block_tokens, d}, DType::F32, ctx.allocator());
  Tensor value_blocks =
      Tensor::zeros({blocks, kv_heads, block_tokens, d}, DType::F32, ctx.allocator());
  const std::vector<std::int32_t> slot_list = {19, 0, 7, 8, 3, 12};
  Tensor slots = Tensor::empty({rows}, DType::I32, ctx.allocator());
  std::copy(slot_list.begin(), slot_list.end(), slots.data<std::int32_t>());
  ops::split_qkv_paged(ctx, qkv, q, key_blocks, value_blocks, slots);
  const std::int64_t width = qkv.dim(1);
  std::vector<bool> written(static_cast<std::size_t>(blocks * block_tokens), false);
  for (std::int64_t n = 0; n < rows; ++n) {
    const float* row = qkv.data<float>() + n * width;
    for (std::int64_t x = 0; x < heads * d; ++x)
      CHECK(q.data<float>()[n * heads * d + x] == row[x]);
    const std::int64_t slot = slot_list[static_cast<std::size_t>(n)];
    written[static_cast<std::size_t>(slot)] = true;
    for (std::int64_t g = 0; g < kv_heads; ++g) {
      const std::int64_t at =
          ((slot / block_tokens * kv_heads + g) * block_tokens + slot % block_tokens) * d;
      for (std::int64_t x = 0; x < d; ++x) {
        CHECK(key_blocks.data<float>()[at + x] == row[(heads + g) * d + x]);
        CHECK(value_blocks.data<float>()[at + x] == row[(heads + kv_heads + g) * d + x]);
      }
    }
  }
  // Every other slot is untouched.
  for (std::int64_t slot = 0; slot < blocks * block_tokens; ++slot) {
    if (written[static_cast<std::size_t>(slot)]) continue;
    for (std::int64_t g = 0; g < kv_heads; ++g) {
      const std::int64_t at =
          ((slot / block_tokens * kv_heads + g) * block_tokens + slot % block_tokens) * d;
      for (std::int64_t x = 0; x < d; ++x) CHECK(key_blocks.data<float>()[at + x] == 0.0f);
    }
  }
  slots.data<std::int32_t>()[2] = 20;
  CHECK_THROWS_WITH_AS(ops::split_qkv_paged(ctx, qkv, q, key_blocks, value_blocks, slots),
                       doctest::Contains("slot 20 of row 2 is outside the 20 slots"), Error);
}

TEST_CASE("a malformed paged call is refused with the reason, by every backend") {
  Context ctx(1);
  std::mt19937 rng(44);
  const RaggedCase c{2, 1, 8, 4, {{1, 9}, {3, 3}}};
  for (const std::string& name : ops::attention::backend_names()) {
    const ops::attention::Backend& backend = ops::attention::find_backend(name);
    CAPTURE(name);
    RaggedCall r = random_ragged_call(c, rng, ctx.allocator());
    r.call.batch = &r.batch;
    r.batch.block_tables[0] = 99;
    CHECK_THROWS_WITH_AS(backend.attend_paged(ctx, r.call), doctest::Contains("names block 99"),
                         Error);
    r = random_ragged_call(c, rng, ctx.allocator());
    r.call.batch = &r.batch;
    r.batch.kv_lens[1] = 2;  // 3 new tokens cannot follow 2 positions
    CHECK_THROWS_WITH_AS(backend.attend_paged(ctx, r.call),
                         doctest::Contains("has 3 new tokens and a kv_len of 2"), Error);
    r = random_ragged_call(c, rng, ctx.allocator());
    r.call.batch = &r.batch;
    r.batch.kv_lens[0] = 13;  // 4 blocks of 4 are needed; the table has 3
    CHECK_THROWS_WITH_AS(backend.attend_paged(ctx, r.call),
                         doctest::Contains("needs 4 blocks; its table has 3"), Error);
    r = random_ragged_call(c, rng, ctx.allocator());
    r.call.batch = &r.batch;
    r.call.out = Tensor::empty({5, 2, 8}, DType::F32, ctx.allocator());
    CHECK_THROWS_WITH_AS(backend.attend_paged(ctx, r.call), doctest::Contains("out"), Error);
  }
}
