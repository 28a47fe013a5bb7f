// Paged attention over a ragged batch: the call the engine's steps make (engine/), where every
// sequence has its own number of new tokens and its own cache length, and its keys and values
// live in the blocks of a paged cache (runtime/paged_kv_cache.h), found through its block table.
//
//   q    [N, Hq, D]                        the new tokens of every sequence, sequence after
//                                          sequence (FlashAttention's varlen layout: token-major)
//   key_blocks, value_blocks [blocks, Hkv, block_tokens, D]
//   out  [N, Hq, D]
//
// Sequence s owns rows [query_starts[s], query_starts[s + 1]) of q and out, Tq_s rows, and
// attends to kv_lens[s] positions; its new tokens are the last Tq_s of them (their keys and
// values are already in the blocks: ops::split_qkv_paged wrote them). Position p of sequence s
// is row p % block_tokens of block block_tables[s][p / block_tokens]. Query i of sequence s sits
// at position kv_lens[s] - Tq_s + i and sees keys 0..that position: per sequence exactly the
// contiguous Call of backend.h, and so the same math.
//
// A prefill chunk (Tq_s > 1, possibly after cached positions: chunked prefill, or a prefix-cache
// hit) and a decode token (Tq_s = 1) are the same call, mixed in one batch.
//
// Two ways to serve it (Backend::attend_paged):
//   gathered (the eager backends, attend_gathered below): per sequence, copy its q rows into
//     [1, Hq, Tq_s, D], its kv_lens[s] key and value rows out of the blocks into compact
//     [1, Hkv, kv_len, D] tensors (step "paged.gather"), run the backend's own recipe on that
//     contiguous Call, and copy the output back into its rows (step "paged.scatter"). The copies
//     are what paging costs an eager backend: they are in its cost model.
//   direct (flash): the kernel reads each key tile through the block table, block by block, and
//     never copies the cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/attention/backend.h"

namespace attnscope::ops::attention {

// The sequences of one ragged call. The host arrays are what the CPU reads and what a GPU's
// copies are made from; on a GPU, device_* hold the same values in device memory (i32), uploaded
// once per step with the step's ids (LanguageModel::forward_paged).
struct RaggedBatch {
  std::int64_t block_tokens = 0;
  std::int64_t max_blocks = 0;             // columns of block_tables
  std::vector<std::int32_t> query_starts;  // S + 1, from 0 to N
  std::vector<std::int32_t> kv_lens;       // S
  std::vector<std::int32_t> block_tables;  // S x max_blocks, unused entries 0
  Tensor device_query_starts, device_kv_lens, device_block_tables;  // on a GPU only

  std::int64_t sequences() const { return static_cast<std::int64_t>(kv_lens.size()); }
  std::int64_t rows() const { return query_starts.empty() ? 0 : query_starts.back(); }
  std::int64_t first_row(std::int64_t s) const { return query_starts[static_cast<std::size_t>(s)]; }
  std::int64_t q_len(std::int64_t s) const { return first_row(s + 1) - first_row(s); }
  std::int64_t kv_len(std::int64_t s) const { return kv_lens[static_cast<std::size_t>(s)]; }
  std::span<const std::int32_t> blocks(std::int64_t s) const {
    return std::span(block_tables)
        .subspan(static_cast<std::size_t>(s * max_blocks), static_cast<std::size_t>(max_blocks));
  }
};

struct PagedCall {
  Tensor q;
  Tensor key_blocks;
  Tensor value_blocks;
  Tensor out;
  const RaggedBatch* batch = nullptr;
  float scale = 1.0f;
  bool bf16_products = false;  // Call::bf16_products

  std::int64_t q_heads() const { return q.dim(1); }
  std::int64_t kv_heads() const { return key_blocks.dim(1); }
  std::int64_t head_dim() const { return q.dim(2); }
};

// The shape of a ragged call, all that its cost depends on: the heads, and each sequence's Tq
// and kv_len. sequence(s) is the contiguous Shape of sequence s alone (batch 1).
struct RaggedShape {
  std::int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
  DType dtype = DType::F32;     // of q and out
  DType kv_dtype = DType::F32;  // of the blocks: dtype, or f16, bf16, q8_0 under f32 on the cpu
  bool bf16_products = false;   // Call::bf16_products
  struct Lengths {
    std::int64_t q_len = 0, kv_len = 0;
  };
  std::vector<Lengths> lengths;

  Shape sequence(std::size_t s) const {
    Shape shape{1, q_heads, kv_heads, lengths[s].q_len, lengths[s].kv_len, head_dim, dtype};
    shape.bf16_products = bf16_products;
    return shape;
  }
};

RaggedShape ragged_shape_of(const PagedCall& call);

// Throws Error (naming `backend`) unless the call's tensors and tables are consistent: shapes,
// one dtype and device (the context's, a float dtype the backend takes there), every sequence
// with 1 <= Tq <= kv_len, enough blocks in its table for kv_len, and every block id in range.
void validate_paged_call(const Context& ctx, const PagedCall& call, const char* backend,
                         bool any_float_on_cpu = false);

// The cost model of a paged call whose backend takes `temporary_bytes` and runs `steps`: the
// FLOPs and bytes every backend shares, cost_of's summed over the sequences, with the key and
// value rows counted in the blocks' dtype.
CostModel ragged_cost_of(const RaggedShape& shape, std::size_t temporary_bytes, int steps);

// The gathered way to serve a paged call with a backend that reads contiguous calls (the top
// comment): per sequence, "paged.gather", backend.attend, "paged.scatter".
void attend_gathered(Context& ctx, const Backend& backend, const PagedCall& call);
// Its cost: the backend's own per sequence, plus the copies. Temporaries: the largest sequence's
// compact q, K, V and out (Hq Tq D + 2 Hkv kv_len D + Hq Tq D elements) beside its backend
// temporaries (they are freed between sequences); steps: the backend's plus 2 per sequence;
// FLOPs and bytes: the sums over the sequences.
CostModel gathered_cost(const Context& ctx, const Backend& backend, const RaggedShape& shape);

// The bodies of the two copies, per device (cpu/paged.cpp, cuda/paged.cu): sequence s's q rows
// into q_s [1, Hq, Tq, D] and its kv_len key and value rows into k_s, v_s [1, Hkv, kv_len, D]
// (read as q's f32 from an f16, bf16 or q8_0 cache on the cpu); and out_s [1, Hq, Tq, D] back
// into its rows of call.out.
namespace cpu {
void gather_sequence(Context& ctx, const PagedCall& call, std::int64_t s, Tensor& q_s, Tensor& k_s,
                     Tensor& v_s);
void scatter_sequence(Context& ctx, const PagedCall& call, std::int64_t s, const Tensor& out_s);
}  // namespace cpu
namespace cuda {
void gather_sequence(Context& ctx, const PagedCall& call, std::int64_t s, Tensor& q_s, Tensor& k_s,
                     Tensor& v_s);
void scatter_sequence(Context& ctx, const PagedCall& call, std::int64_t s, const Tensor& out_s);
}  // namespace cuda

}  // namespace attnscope::ops::attention
