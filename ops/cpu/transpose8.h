// transpose8: an 8 x 8 block of floats transposed in eight AVX2 registers, for packing the
// avx2 level's GEMM operands (ops/cpu/gemm.cpp) and flash's keys (ops/attention/cpu/
// query_tile.cpp); and sum_lanes8, eight dot products summed across their lanes together
// (flash's decode rows, ops/attention/cpu/decode_row.cpp). transpose16.h holds the AVX-512 ones.
//
// The algorithm, three rounds as in transpose16 (each swaps one bit of the row index with the same
// bit of the column index), each round with the instruction that fits its block size:
//  - unpacklo/hi interleave the lanes of rows 2i and 2i + 1: 2 x 2 blocks swapped;
//  - shuffle with 0x44 / 0xEE takes pairs of lanes from two of those rows: 4 x 4 blocks of pairs;
//  - permute2f128 joins the 128-bit halves of rows i and i + 4: the two 4 x 4 blocks of halves.
// 8 + 8 + 8 = 24 shuffles for 64 values.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace attnscope::ops::cpu {

__attribute__((target("avx2"), always_inline)) inline void transpose8(__m256 r[8]) {
  __m256 pairs[8];
#pragma GCC unroll 4
  for (int i = 0; i < 8; i += 2) {
    pairs[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // r[i][0] r[i+1][0] r[i][1] r[i+1][1]
    pairs[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // r[i][2] r[i+1][2] r[i][3] r[i+1][3]
  }
  __m256 quads[8];
#pragma GCC unroll 2
  for (int i = 0; i < 8; i += 4) {
    quads[i] = _mm256_shuffle_ps(pairs[i], pairs[i + 2], 0x44);      // column 0 (and 4)
    quads[i + 1] = _mm256_shuffle_ps(pairs[i], pairs[i + 2], 0xEE);  // column 1 (and 5)
    quads[i + 2] = _mm256_shuffle_ps(pairs[i + 1], pairs[i + 3], 0x44);
    quads[i + 3] = _mm256_shuffle_ps(pairs[i + 1], pairs[i + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2f128_ps(quads[j], quads[j + 4], 0x20);      // columns 0-3: low halves
    r[j + 4] = _mm256_permute2f128_ps(quads[j], quads[j + 4], 0x31);  // columns 4-7: high halves
  }
}

// Lane i of the result = the sum of r[i]'s 8 lanes. hadd(a, b) adds neighbouring lanes, in each
// 128-bit half a's two pairs then b's: after two rounds each half holds, for four rows, the sums
// of that half's four lanes (rows 0-3 in one vector, 4-7 in the other); joining the low halves and
// the high halves with permute2f128 and adding them finishes the sums. 6 hadds, 2 permutes and 1
// addition, against transpose8's 24 shuffles and 7 additions.
__attribute__((target("avx2"), always_inline)) inline __m256 sum_lanes8(const __m256 r[8]) {
  const __m256 pairs01 = _mm256_hadd_ps(r[0], r[1]);  // r0 01 23, r1 01 23 | r0 45 67, r1 45 67
  const __m256 pairs23 = _mm256_hadd_ps(r[2], r[3]);
  const __m256 pairs45 = _mm256_hadd_ps(r[4], r[5]);
  const __m256 pairs67 = _mm256_hadd_ps(r[6], r[7]);
  const __m256 rows0123 = _mm256_hadd_ps(pairs01, pairs23);  // r0-r3 0123 | r0-r3 4567
  const __m256 rows4567 = _mm256_hadd_ps(pairs45, pairs67);
  return _mm256_add_ps(_mm256_permute2f128_ps(rows0123, rows4567, 0x20),   // low halves
                       _mm256_permute2f128_ps(rows0123, rows4567, 0x31));  // high halves
}

}  // namespace attnscope::ops::cpu

#endif  // __x86_64__
