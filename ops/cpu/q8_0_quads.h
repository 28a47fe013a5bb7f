// block_quads: one block of 32 bytes from each of 16 rows, rearranged for vpdpbusd (AVX-512
// VNNI), which adds to each of a vector's 16 int32 lanes the sum of 4 byte products. Both
// kernels on byte dot products put 16 rows in a vector's lanes this way: the prefill GEMM its
// weight rows (ops/cpu/gemm_q8_0_vnni.cpp), the batched decode its input rows
// (ops/cpu/decode_q8_0_vnni.cpp).
//
// quads[q] holds in lane i bytes 4q .. 4q + 3 of row i's block: the 16 rows' blocks loaded as 16
// rows of dwords (8 each, zero-extended to 16) and transposed in registers
// (ops/cpu/transpose16.h). Returned: each row's compensation -128 sum_i q[i], for a product
// whose other operand is offset by 128 to make it unsigned (vpdpbusd's other operand); the sums
// by vpdpbusd against ones, 4 bytes a lane at a time. Rows from `count` on are zeros.
// Cost: 16 loads, 64 permutes and 8 vpdpbusd per block of 16 rows.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#include "ops/cpu/transpose16.h"
#include "runtime/q8_0.h"

namespace attnscope::ops::cpu {

// The quads of a block: 4 bytes each, the 4 products one vpdpbusd lane sums.
constexpr int kQuadsPerBlock = kQ8_0BlockElements / 4;

// Row i's block starts at first + i * stride bytes (i < count <= 16).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) inline __m512i block_quads(
    const std::int8_t* first, std::int64_t stride, int count, __m512i quads[kQuadsPerBlock]) {
  __m512 rows[16];
  for (int i = 0; i < 16; ++i) {
    rows[i] = i < count ? _mm512_castsi512_ps(_mm512_zextsi256_si512(_mm256_loadu_si256(
                              reinterpret_cast<const __m256i*>(first + i * stride))))
                        : _mm512_setzero_ps();
  }
  transpose16(rows);
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i sums = _mm512_setzero_si512();
  for (int q = 0; q < kQuadsPerBlock; ++q) {
    quads[q] = _mm512_castps_si512(rows[q]);
    sums = _mm512_dpbusd_epi32(sums, ones, quads[q]);
  }
  return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 7));
}

}  // namespace attnscope::ops::cpu

#endif  // __x86_64__
