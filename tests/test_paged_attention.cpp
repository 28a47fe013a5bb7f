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

#include "cpu_levels.h"
#include "ops/attention/registry.h"
#include "ops/heads.h"
#include "paged_checks.h"
#include "profiler/cpu_tracer.h"
#include "runtime/error.h"

using namespace attnscope;
using testing::ragged_cases;
using testing::RaggedCall;
using testing::RaggedCase;
using testing::random_ragged_call;
using testing::random_tensor;
using testing::reference_paged;

namespace {

int kernel_steps(const std::vector<profiler::Event>& events) {
  return static_cast<int>(std::count_if(events.begin(), events.end(), [](const profiler::Event& e) {
    return std::string(e.category) == "kernel";
  }));
}

// Every backend's paged attention of r's call, each into an output of NaNs, against `expected`.
void check_every_backend(Context& ctx, const RaggedCall& r, const std::vector<double>& expected) {
  for (const std::string& name : ops::attention::backend_names()) {
    ops::attention::PagedCall call = r.call;
    call.batch = &r.batch;
    std::fill_n(call.out.data<float>(), call.out.numel(), NAN);
    ops::attention::find_backend(name).attend_paged(ctx, call);
    CAPTURE(name);
    CHECK(testing::max_relative_error(call.out, expected, 1.0) < 1e-5);
  }
}

}  // namespace

TEST_CASE("every backend's paged attention equals float64 attention of each sequence alone") {
  std::mt19937 rng(41);
  for (int threads : {1, 2}) {
    Context ctx(threads);
    for (const RaggedCase& c : ragged_cases()) {
      const RaggedCall r = random_ragged_call(c, rng, ctx.allocator());
      CAPTURE(threads);
      CAPTURE(c.block_tokens);
      check_every_backend(ctx, r, reference_paged(r, ctx.allocator()));
    }
  }
}

TEST_CASE(
    "every backend's paged attention over an f16, bf16 or q8_0 cache equals float64 attention of "
    "its values, at every cpu level") {
  std::mt19937 rng(45);
  Context ctx(2);
  testing::for_each_cpu_level([&] {
    for (DType cache : {DType::F16, DType::BF16, DType::Q8_0}) {
      for (const RaggedCase& c : ragged_cases()) {
        if (cache == DType::Q8_0 && c.head_dim % 32 != 0) continue;  // not whole blocks
        RaggedCall r = random_ragged_call(c, rng, ctx.allocator());
        r.call.key_blocks = r.call.key_blocks.to_dtype(cache, ctx.allocator());
        r.call.value_blocks = r.call.value_blocks.to_dtype(cache, ctx.allocator());
        // The reference reads the cache's values, back in f32 (exactly).
        RaggedCall widened = r;
        widened.call.key_blocks = r.call.key_blocks.to_dtype(DType::F32, ctx.allocator());
        widened.call.value_blocks = r.call.value_blocks.to_dtype(DType::F32, ctx.allocator());
        CAPTURE(dtype_name(cache));
        CAPTURE(c.block_tokens);
        check_every_backend(ctx, r, reference_paged(widened, ctx.allocator()));
      }
    }
  });
}

TEST_CASE("with bf16 products, flash's paged prefill chunks round q, k, v and p on AMX tiles") {
  // As tests/test_flash.cpp's contiguous case: at the amx level the sequences with a whole query
  // tile (64 rows) at a head dim that is a multiple of 32 take the tiles, and match float64
  // attention of their rounded q, k and v within p's rounding; every other sequence, and every
  // sequence below the amx level, computes exactly as without the flag. Decode rows beside the
  // prefill chunks, a chunk behind cached positions, blocks of 16 and of 7 (key groups across
  // blocks), f32 and bf16 caches.
  std::mt19937 rng(47);
  Context ctx(2);
  const std::vector<RaggedCase> cases = {
      {4, 2, 64, 16, {{1, 37}, {100, 100}, {64, 300}, {9, 49}}},
      {3, 3, 32, 7, {{70, 90}, {1, 15}, {130, 130}}},
      {2, 1, 128, 16, {{65, 65}, {1, 1}}},
  };
  const ops::attention::Backend& flash = ops::attention::find_backend("flash");
  int amx_sequences = 0;
  testing::for_each_cpu_level([&] {
    for (DType cache : {DType::F32, DType::BF16}) {
      for (const RaggedCase& c : cases) {
        CAPTURE(dtype_name(cache));
        CAPTURE(c.block_tokens);
        RaggedCall r = random_ragged_call(c, rng, ctx.allocator());
        r.call.key_blocks = r.call.key_blocks.to_dtype(cache, ctx.allocator());
        r.call.value_blocks = r.call.value_blocks.to_dtype(cache, ctx.allocator());
        ops::attention::PagedCall call = r.call;
        call.batch = &r.batch;
        flash.attend_paged(ctx, call);
        const std::vector<double> in_f32 = testing::to_double(call.out);
        call.bf16_products = true;
        flash.attend_paged(ctx, call);
        RaggedCall rounded = r;  // q, K and V rounded to bf16, in f32 for the reference
        rounded.call.q = testing::rounded_to_bf16(r.call.q, ctx.allocator());
        rounded.call.key_blocks = testing::rounded_to_bf16(r.call.key_blocks, ctx.allocator());
        rounded.call.value_blocks = testing::rounded_to_bf16(r.call.value_blocks, ctx.allocator());
        const std::vector<double> expected = reference_paged(rounded, ctx.allocator());
        RaggedCall sizes = rounded;
        sizes.call.value_blocks = testing::magnitudes(rounded.call.value_blocks, ctx.allocator());
        const std::vector<double> weight = reference_paged(sizes, ctx.allocator());
        const auto row_elements = static_cast<std::size_t>(c.q_heads * c.head_dim);
        for (std::int64_t seq = 0; seq < r.batch.sequences(); ++seq) {
          CAPTURE(seq);
          const auto first = static_cast<std::size_t>(r.batch.first_row(seq)) * row_elements;
          const auto last = first + static_cast<std::size_t>(r.batch.q_len(seq)) * row_elements;
          const bool tiles = cpu_level() == CpuLevel::Amx && r.batch.q_len(seq) >= 64;
          if (!tiles) {
            CHECK(std::equal(in_f32.begin() + static_cast<std::ptrdiff_t>(first),
                             in_f32.begin() + static_cast<std::ptrdiff_t>(last),
                             call.out.data<float>() + first));
            continue;
          }
          ++amx_sequences;
          CHECK(testing::share_of_rounded_p_bound(call.out, expected, weight, first, last) <= 1.0);
        }
      }
    }
  });
  if (testing::levels_of_this_cpu().back() == CpuLevel::Amx) {
    CHECK(amx_sequences == 10);  // 5 sequences of 64 rows or more, over both caches
  } else {
    MESSAGE("this CPU has no amx level: flash's paged AMX products not tested");
  }
}

TEST_CASE("paged attention allocates the bytes and runs the kernel steps its cost model states") {
  std::mt19937 rng(42);
  for (int threads : {1, 2}) {
    Context ctx(threads);
    for (const RaggedCase& c : ragged_cases()) {
      RaggedCall r = random_ragged_call(c, rng, ctx.allocator());
      // On 2 threads also over a bf16 cache, whose rows as f32 flash allocates, and with bf16
      // products: at the amx level flash packs the 100-row chunk's keys and values for its tiles.
      if (threads == 2) {
        r.call.key_blocks = r.call.key_blocks.to_dtype(DType::BF16, ctx.allocator());
        r.call.value_blocks = r.call.value_blocks.to_dtype(DType::BF16, ctx.allocator());
        r.call.bf16_products = true;
      }
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
        // Every backend's bytes: q and out in f32, each sequence's key and value rows in the
        // cache's dtype.
        std::size_t bytes = 0;
        for (const auto& l : c.lengths) {
          bytes += static_cast<std::size_t>(c.head_dim) *
                   (2 * c.q_heads * l.q_len * 4 +
                    2 * c.kv_heads * l.kv_len * dtype_size(call.key_blocks.dtype()));
        }
        CHECK(model.bytes == bytes);
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
  // Into f16 and bf16 blocks: each key and value rounded as runtime/dtype.h rounds one value.
  for (DType cache : {DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(cache));
    Tensor keys16 = Tensor::zeros(key_blocks.shape(), cache, ctx.allocator());
    Tensor values16 = Tensor::zeros(key_blocks.shape(), cache, ctx.allocator());
    ops::split_qkv_paged(ctx, qkv, q, keys16, values16, slots);
    const auto round = [&](float x) {
      return cache == DType::F16 ? f32_to_f16(x) : f32_to_bf16(x);
    };
    for (std::int64_t n = 0; n < rows; ++n) {
      const float* row = qkv.data<float>() + n * width;
      const std::int64_t slot = slot_list[static_cast<std::size_t>(n)];
      for (std::int64_t g = 0; g < kv_heads; ++g) {
        const std::int64_t at =
            ((slot / block_tokens * kv_heads + g) * block_tokens + slot % block_tokens) * d;
        for (std::int64_t x = 0; x < d; ++x) {
          CHECK(keys16.data<std::uint16_t>()[at + x] == round(row[(heads + g) * d + x]));
          CHECK(values16.data<std::uint16_t>()[at + x] ==
                round(row[(heads + kv_heads + g) * d + x]));
        }
      }
    }
  }
  Tensor mixed = Tensor::zeros(key_blocks.shape(), DType::BF16, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::split_qkv_paged(ctx, qkv, q, key_blocks, mixed, slots),
                       doctest::Contains("value_blocks"), Error);
  Tensor ints = Tensor::zeros(key_blocks.shape(), DType::I32, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::split_qkv_paged(ctx, qkv, q, ints, ints, slots),
                       doctest::Contains("a KV cache of i32 cannot serve f32 activations"), Error);
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
    r = random_ragged_call(c, rng, ctx.allocator());
    r.call.batch = &r.batch;
    r.call.value_blocks = r.call.value_blocks.to_dtype(DType::BF16, ctx.allocator());
    CHECK_THROWS_WITH_AS(backend.attend_paged(ctx, r.call), doctest::Contains("value_blocks"),
                         Error);
    r.call.key_blocks = Tensor::zeros(r.call.key_blocks.shape(), DType::I32, ctx.allocator());
    r.call.value_blocks = r.call.key_blocks;
    CHECK_THROWS_WITH_AS(backend.attend_paged(ctx, r.call),
                         doctest::Contains("a KV cache of i32 cannot serve f32 activations on cpu"),
                         Error);
  }
}
