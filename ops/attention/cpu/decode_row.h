// The two products of flash's online softmax for one query row (a decode step) on the cpu, from
// the avx2 level on (runtime/cpu_features.h): a run of keys' scores s_j = q . k_j, and their
// values' sum added to the output, out += sum_j p_j v_j. ops/attention/cpu/flash.cpp calls them
// for each run of keys that lie together (one block of a paged cache, or a whole key tile);
// decode_row.cpp says how and what it gained.
#pragma once

#include <cstdint>

#include "runtime/cpu_features.h"
#include "runtime/dtype.h"

namespace attnscope::ops::attention::cpu {

// Whether the kernels below serve rows of `head_dim` values at cpu `level`: from the avx2 level
// on, head_dim a multiple of 16 (otherwise flash multiplies through Eigen). The kernels take the
// level too (cpu_level(), read once by the caller: they run once per block of a paged cache).
bool decode_row_kernels_apply(CpuLevel level, std::int64_t head_dim);

// scores[j] = q . k_j for the `keys` rows of k (head_dim values each, one after another, of
// `rows`: f32, or f16, bf16 or q8_0 read as f32 as they are loaded).
void decode_row_scores(CpuLevel level, const float* q, const void* k, DType rows, std::int64_t keys,
                       std::int64_t head_dim, float* scores);

// out += sum_j p[j] v_j for the `keys` rows of v (head_dim values each, one after another, of
// `rows`, as above).
void decode_row_values(CpuLevel level, const float* p, const void* v, DType rows, std::int64_t keys,
                       std::int64_t head_dim, float* out);

}  // namespace attnscope::ops::attention::cpu
