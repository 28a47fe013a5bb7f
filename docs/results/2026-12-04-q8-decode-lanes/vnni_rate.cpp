// How many 512-bit vpdpbusd one core retires per nanosecond, operands in registers, 12
// independent accumulators (as many as the q8_0 kernels keep): the ceiling of a byte kernel.
//   g++ -O2 -march=native vnni_rate.cpp -o vnni_rate && ./vnni_rate
#include <immintrin.h>

#include <chrono>
#include <cstdio>

int main(int argc, char**) {
  __m512i acc[12];
  for (__m512i& a : acc) a = _mm512_set1_epi32(argc);
  const __m512i x = _mm512_set1_epi32(0x01020304 * argc), w = _mm512_set1_epi32(0x05060708);
  constexpr long kRounds = 200000000;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < kRounds; ++i) {
#pragma GCC unroll 12
    for (__m512i& a : acc) a = _mm512_dpbusd_epi32(a, x, w);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int checksum = 0;  // keeps the loop
  for (const __m512i& a : acc) checksum += _mm512_reduce_add_epi32(a);
  std::printf("%.2f vpdpbusd/ns, %.1f G byte products/s per core (checksum %d)\n",
              kRounds * 12 / seconds / 1e9, kRounds * 12 * 64 / seconds / 1e9, checksum);
}
