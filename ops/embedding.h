// The input embedding: the token's row plus, for a family with learned positions (GPT-2), the
// position's row.
//
//   out[n, :] = token_table[token_ids[n], :] + position_table[positions[n], :]
//
// An undefined position_table means no learned positions (Llama's RoPE rotates q and k inside
// attention instead): out[n, :] = token_table[token_ids[n], :], and positions are not read.
// Shapes: token_table [V, C], position_table [P, C], token_ids and positions [N], out [N, C];
// on cuda tables and out share one dtype (f32, f16 or bf16, added in f32); on the cpu the
// position table and out are f32 and the token table is f32, bf16, f16 or q8_0 (the LM head's
// weight dtype, since GPT-2 ties the two; its rows are widened, or dequantized, as they are read).
// Cost: reads 2 N C elements (random rows) and writes N C, N C FLOPs (the adds; none without
// positions), one launch on a GPU.
//
// Ids and positions are checked against V and P. On the cpu an out-of-range id is an Error,
// never an out-of-bounds read. On a GPU the ids already live on the device and reading them
// back would cost a synchronisation per step, so the kernel checks each row itself: a row whose
// id or position is out of range is written as NaN and nothing outside the tables is read. The
// model checks ids on the host before uploading them, so NaN rows mean a caller skipped that.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

// Ids and positions from host memory; the tables must be on the cpu.
void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               std::span<const std::int32_t> token_ids, std::span<const std::int64_t> positions,
               Tensor& out);

// Ids and positions as i32 tensors [N] on the tables' device (cpu or cuda).
void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               const Tensor& token_ids, const Tensor& positions, Tensor& out);

// The implementations ops::embedding dispatches to, after its checks.
namespace cpu {
void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               std::span<const std::int32_t> token_ids, std::span<const std::int64_t> positions,
               Tensor& out);
}
namespace cuda {
void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               const Tensor& token_ids, const Tensor& positions, Tensor& out);
}

}  // namespace attnscope::ops
