// transpose16: a 16 x 16 block of floats transposed in sixteen AVX-512 registers, for the cpu
// kernels that need one (packing the GEMM's operands, ops/cpu/gemm.cpp), and sum_lanes16, its
// rounds turned into a sum of sixteen dot products across their lanes at once (the decode tiles,
// ops/cpu/dot_tile.h; flash's decode rows, ops/attention/cpu/decode_row.cpp).
//
// The algorithm: transposing swaps the bits of the row index i with those of the column index j.
// One round per bit b (block sizes 8, 4, 2, 1) swaps bit b alone: rows i and i + b (bit b of i
// clear) exchange the elements whose column has bit b set in the top row and clear in the bottom
// one, i.e. the off-diagonal b x b blocks of every 2b x 2b block. Each new row takes its elements
// from the two old rows with one two-source permute (vpermt2ps): 4 rounds x 16 rows = 64 permutes.
// (Not the unpack/shuffle intrinsics: with GCC 12 they warn about their deliberately undefined
// pass-through operand once inlined, GCC bug 105593; the permute has none.)
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace attnscope::ops::cpu {

// kTransposeIndex[round][0 or 1][j]: the permute indices (0-15 the top row, 16-31 the bottom
// one) of column j of the new top and bottom rows in the round with block size 8 >> round.
struct TransposeIndex {
  int index[4][2][16];
};
constexpr TransposeIndex make_transpose_index() {
  TransposeIndex t{};
  for (int round = 0; round < 4; ++round) {
    const int b = 8 >> round;
    for (int j = 0; j < 16; ++j) {
      t.index[round][0][j] = (j & b) != 0 ? 16 + (j ^ b) : j;  // top: bottom row's j - b
      t.index[round][1][j] = (j & b) != 0 ? 16 + j : (j | b);  // bottom: top row's j + b
    }
  }
  return t;
}
inline constexpr TransposeIndex kTransposeIndex = make_transpose_index();

// Fully unrolled (the pragmas), so that every index is a constant and r stays in registers: a
// rolled loop indexes r at run time, which puts all sixteen vectors in memory.
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 r[16]) {
#pragma GCC unroll 4
  for (int round = 0; round < 4; ++round) {
    const int b = 8 >> round;
    const __m512i top_index = _mm512_loadu_si512(kTransposeIndex.index[round][0]);
    const __m512i bottom_index = _mm512_loadu_si512(kTransposeIndex.index[round][1]);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      if ((i & b) != 0) continue;
      const __m512 top = r[i], bottom = r[i + b];
      r[i] = _mm512_permutex2var_ps(top, top_index, bottom);
      r[i + b] = _mm512_permutex2var_ps(top, bottom_index, bottom);
    }
  }
}

// Lane i of the result = the sum of r[i]'s 16 lanes (r is overwritten): sixteen dot products
// summed across their lanes together. The same rounds as transpose16, whose rows would all be
// added at the end; since every later round moves the lanes of a round's top and bottom rows
// alike, the two can be added as soon as they are formed, and each round works on half as many
// rows: 16 + 8 + 4 + 2 = 30 permutes and 15 additions, against transpose16's 64 and the same 15.
__attribute__((target("avx512f"), always_inline)) inline __m512 sum_lanes16(__m512 r[16]) {
#pragma GCC unroll 4
  for (int round = 0; round < 4; ++round) {
    const int b = 8 >> round;
    const __m512i top_index = _mm512_loadu_si512(kTransposeIndex.index[round][0]);
    const __m512i bottom_index = _mm512_loadu_si512(kTransposeIndex.index[round][1]);
#pragma GCC unroll 8
    for (int i = 0; i < b; ++i) {
      r[i] = _mm512_add_ps(_mm512_permutex2var_ps(r[i], top_index, r[i + b]),
                           _mm512_permutex2var_ps(r[i], bottom_index, r[i + b]));
    }
  }
  return r[0];
}

}  // namespace attnscope::ops::cpu

#endif  // __x86_64__
