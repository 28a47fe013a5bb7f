// The two products of flash's online softmax for a tile of query rows (a prefill) on the cpu,
// from the avx2 level on (runtime/cpu_features.h): a run of keys' scores S = Q K^T, and their
// values' sum added to the output, O (=|+=) P V. ops/attention/cpu/flash.cpp calls them for each
// run of keys that lie together (one block of a paged cache, or a whole key tile), as it calls
// decode_row.h's for a single row; query_tile.cpp says how and what it gained.
#pragma once

#include <cstdint>

#include "runtime/cpu_features.h"

namespace attnscope::ops::attention::cpu {

// Whether the kernels below serve rows of `head_dim` values at cpu `level`: the avx2 level and
// up, and head_dim a multiple of 16 up to kQueryTileMaxHeadDim (otherwise flash multiplies
// through Eigen). The kernels take the level too (cpu_level(), read once by the caller).
constexpr std::int64_t kQueryTileMaxHeadDim = 256;
bool query_tile_kernels_apply(CpuLevel level, std::int64_t head_dim);

// s[r * ld_s + j] = q_r . k_j for r < rows (q's rows q_stride apart) and the `keys` rows of k
// (head_dim floats each, one after another).
void query_tile_scores(CpuLevel level, const float* q, std::int64_t q_stride, std::int64_t rows,
                       const float* k, std::int64_t keys, std::int64_t head_dim, float* s,
                       std::int64_t ld_s);

// o_r (=|+=) sum_j p[r * ld_p + j] v_j for r < rows (o's rows ld_o apart; = with `overwrite`) and
// the `keys` rows of v (head_dim floats each, one after another).
void query_tile_values(CpuLevel level, const float* p, std::int64_t ld_p, std::int64_t rows,
                       const float* v, std::int64_t keys, std::int64_t head_dim, float* o,
                       std::int64_t ld_o, bool overwrite);

}  // namespace attnscope::ops::attention::cpu
