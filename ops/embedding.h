// GPT-2's input embedding: the token's row plus the position's row.
//
//   out[n, :] = token_table[token_ids[n], :] + position_table[positions[n], :]
//
// Shapes: token_table [V, C], position_table [P, C], token_ids and positions [N], out [N, C].
// Cost: reads 2 N C floats (random rows) and writes N C. Ids and positions are checked against
// V and P: an out-of-range id is an Error, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               std::span<const std::int32_t> token_ids, std::span<const std::int64_t> positions,
               Tensor& out);

}  // namespace attnscope::ops
