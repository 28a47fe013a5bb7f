// decode_row (ops/attention/cpu/decode_row.h): one query row against a run of key and value rows,
// with AVX-512.
//
// Scores: 16 keys at a time, row after row as they lie in memory, each key's head_dim values
// multiplied into an accumulator of its own (head_dim / 16 FMAs), then the 16 sums reduced across
// their lanes together by one transpose16 and 15 additions (ops/cpu/transpose16.h), as the linear
// layers' decode tiles reduce theirs (ops/cpu/dot_tile.h). A run's last keys fill the 16 with
// repeats of its first key, whose sums are not stored.
// Values: key after key, p_j v_j added to the output 16 lanes at a time.
// Cost per key: its key and value rows read (2 head_dim floats), 2 head_dim multiply-adds.
// Measured against Eigen's products (Zen 4, 2 threads, synthetic:gpt2 q8_0, 16 sequences behind
// 512 tokens, docs/results/2026-12-04-decode-attention/): flash per layer 1.25x (1.06-1.49, 7
// rounds). Summing V a 16-lane column slice at a time over all keys, strided, was 0.77x.
#include "ops/attention/cpu/decode_row.h"

#include <algorithm>

#include "runtime/cpu_features.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/cpu/dot_tile.h"
#include "ops/cpu/transpose16.h"
#endif

namespace attnscope::ops::attention::cpu {

bool decode_row_kernels_apply(std::int64_t head_dim) {
#if defined(__x86_64__)
  return cpu_level() >= CpuLevel::Avx512 && head_dim % 16 == 0;
#else
  (void)head_dim;
  return false;
#endif
}

#if defined(__x86_64__)

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) void decode_row_scores(
    const float* q, const float* k, std::int64_t keys, std::int64_t head_dim, float* scores) {
  for (std::int64_t first = 0; first < keys; first += 16) {
    const std::int64_t count = std::min<std::int64_t>(16, keys - first);
    __m512 sums[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      const float* row = k + (first + (i < count ? i : 0)) * head_dim;
      sums[i] = _mm512_setzero_ps();
      for (std::int64_t c = 0; c < head_dim; c += 16) {
        sums[i] = _mm512_fmadd_ps(_mm512_loadu_ps(q + c), _mm512_loadu_ps(row + c), sums[i]);
      }
    }
    ops::cpu::transpose16(sums);  // sums[l] lane i: part l of key i's dot product
    __m512 total = sums[0];
#pragma GCC unroll 15
    for (int l = 1; l < 16; ++l) total = _mm512_add_ps(total, sums[l]);
    _mm512_mask_storeu_ps(scores + first, ops::cpu::first_lanes(count), total);
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) void decode_row_values(
    const float* p, const float* v, std::int64_t keys, std::int64_t head_dim, float* out) {
  for (std::int64_t j = 0; j < keys; ++j) {
    const __m512 weight = _mm512_set1_ps(p[j]);
    for (std::int64_t c = 0; c < head_dim; c += 16) {
      _mm512_storeu_ps(out + c, _mm512_fmadd_ps(weight, _mm512_loadu_ps(v + j * head_dim + c),
                                                _mm512_loadu_ps(out + c)));
    }
  }
}

#else

void decode_row_scores(const float*, const float*, std::int64_t, std::int64_t, float*) {
  check(false, "decode_row_scores", "AVX-512 exists on x86-64 CPUs only");
}
void decode_row_values(const float*, const float*, std::int64_t, std::int64_t, float*) {
  check(false, "decode_row_values", "AVX-512 exists on x86-64 CPUs only");
}

#endif  // __x86_64__

}  // namespace attnscope::ops::attention::cpu
