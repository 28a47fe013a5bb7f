// decode_row (ops/attention/cpu/decode_row.h): one query row against a run of key and value rows,
// with AVX-512 (below) or AVX2 (the same two kernels with 8 lanes: 8 keys' scores at a time,
// reduced by transpose8.h's sum_lanes8, and slices of up to 8 vectors, 64 columns, of the output).
//
// Scores: 16 keys at a time, row after row as they lie in memory, each key's head_dim values
// multiplied into an accumulator of its own (head_dim / 16 FMAs), then the 16 sums reduced across
// their lanes together by sum_lanes16 (ops/cpu/transpose16.h), as the linear layers' decode tiles
// reduce theirs (ops/cpu/dot_tile.h). A run's last keys fill the 16 with repeats of its first
// key, whose sums are not stored.
// Values: the output row held in registers (up to 8 vectors, 128 columns, a slice at a time
// above), p_j v_j added key after key. Written as out[c] += p_j v_j[c] in memory, each key's
// update waited on the store of the one before. With the output in registers (Zen 4, 2 threads,
// interleaved rounds, docs/results/2026-12-05-decode-values-registers/): one sequence behind 1024
// positions, where K and V stay in cache, 1.20-1.24x at d 64; 16 sequences paged behind 512,
// where reading K and V from memory bounds it, 0.97-1.02x at d 64 and 1.14x at d 128 (all
// within noise of even); the engine serving q8_0 GPT-2 at concurrency 16 1.03x (1.02-1.04).
// Rows of a cache in f16, bf16 or q8_0 (the engine's --kv-dtype) become f32 as each vector is
// loaded (dot_tile.h's formats), not first copied out as f32: widening a block into L1 before
// the f32 kernels read it left the time where it was (the loads of the widening waited on memory
// as the kernels' had); widened as loaded, 16 sequences paged behind 512 positions took 0.60-0.67
// ms in bf16 against f32's 1.24-1.30, and the engine at concurrency 16 1.19x; q8_0 1.04x f16
// there (Zen 4, 2 threads, docs/results/2026-12-05-kv-cache-types/).
// Cost per key: its key and value rows read (2 head_dim values), 2 head_dim multiply-adds.
// Measured against Eigen's products (Zen 4, 2 threads, synthetic:gpt2 q8_0, 16 sequences behind
// 512 tokens, docs/results/2026-12-04-decode-attention/): flash per layer 1.25x (1.06-1.49, 7
// rounds). Summing V a 16-lane column slice at a time over all keys, strided, was 0.77x. The AVX2
// kernels (Zen 3, 2 threads, docs/results/2026-12-07-avx2-decode-attention/): the engine's paged
// attention over a concurrency-16 serving run 1.09-1.18x with an f32 cache, 1.20-1.23x bf16,
// 1.22-1.33x q8_0 (2 alternated rounds each); the op alone on an f32 cache within noise (bound by
// reading K and V).
#include "ops/attention/cpu/decode_row.h"

#include <algorithm>
#include <array>

#include "runtime/cpu_features.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/cpu/dot_tile.h"
#include "ops/cpu/output_blocks.h"
#include "ops/cpu/transpose16.h"
#include "ops/cpu/transpose8.h"
#endif

namespace attnscope::ops::attention::cpu {

bool decode_row_kernels_apply(CpuLevel level, std::int64_t head_dim) {
#if defined(__x86_64__)
  return level >= CpuLevel::Avx2 && head_dim % 16 == 0;
#else
  (void)level;
  (void)head_dim;
  return false;
#endif
}

#if defined(__x86_64__)

namespace {

// How a kernel reads a key or value row: 16 values from value c on as f32 lanes, and how many
// Elements a row of head_dim values takes. f32, f16 and bf16 values lie one after another
// (dot_tile.h's formats load them); q8_0 rows are blocks of 32 (dot_tile.h's Q8_0Rows).
template <typename Values>
struct PlainRows {
  using Element = typename Values::Element;
  static std::int64_t elements(std::int64_t head_dim) { return head_dim; }
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) static __m512 load(
      const Element* row, std::int64_t c) {
    return Values::load(row + c);
  }
  __attribute__((target("avx2,fma,f16c"))) static __m256 load8(const Element* row, std::int64_t c) {
    return Values::load8(row + c);
  }
};
struct BlockRows : ops::cpu::Q8_0Rows {
  using Element = BlockQ8_0;
  static std::int64_t elements(std::int64_t head_dim) { return head_dim / kQ8_0BlockElements; }
};
using F32Rows = PlainRows<ops::cpu::F32Weights>;
using F16Rows = PlainRows<ops::cpu::F16Weights>;
using Bf16Rows = PlainRows<ops::cpu::Bf16Weights>;

// ---- AVX-512 (the avx512 levels) ----

// scores[j] = q . k_j, 16 keys at a time; `Rows` loads 16 of k's values as f32 lanes.
template <typename Rows>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void row_scores(
    const float* q, const typename Rows::Element* k, std::int64_t keys, std::int64_t head_dim,
    float* scores) {
  for (std::int64_t first = 0; first < keys; first += 16) {
    const std::int64_t count = std::min<std::int64_t>(16, keys - first);
    __m512 sums[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      const typename Rows::Element* row =
          k + (first + (i < count ? i : 0)) * Rows::elements(head_dim);
      sums[i] = _mm512_setzero_ps();
      for (std::int64_t c = 0; c < head_dim; c += 16) {
        sums[i] = _mm512_fmadd_ps(_mm512_loadu_ps(q + c), Rows::load(row, c), sums[i]);
      }
    }
    _mm512_mask_storeu_ps(scores + first, ops::cpu::first_lanes(count),
                          ops::cpu::sum_lanes16(sums));
  }
}

// out[c, c + 16 kVectors) += sum_j p[j] v_j[c, c + 16 kVectors): that slice of the output stays
// in registers while the keys go by.
template <typename Rows, int kVectors>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void add_weighted_rows(
    const float* p, const typename Rows::Element* v, std::int64_t keys, std::int64_t head_dim,
    std::int64_t c, float* out) {
  __m512 sums[kVectors];
  for (int i = 0; i < kVectors; ++i) sums[i] = _mm512_loadu_ps(out + c + 16 * i);
  for (std::int64_t j = 0; j < keys; ++j) {
    const __m512 weight = _mm512_set1_ps(p[j]);
    const typename Rows::Element* row = v + j * Rows::elements(head_dim);
    for (int i = 0; i < kVectors; ++i) {
      sums[i] = _mm512_fmadd_ps(weight, Rows::load(row, c + 16 * i), sums[i]);
    }
  }
  for (int i = 0; i < kVectors; ++i) _mm512_storeu_ps(out + c + 16 * i, sums[i]);
}

// A slice is at most 8 vectors (128 columns: every head dim of GPT-2 and the Llama family in one).
constexpr int kMaxSliceVectors = 8;
template <typename Rows>
using AddWeightedRows = void (*)(const float*, const typename Rows::Element*, std::int64_t,
                                 std::int64_t, std::int64_t, float*);
template <typename Rows>
constexpr std::array<AddWeightedRows<Rows>, kMaxSliceVectors> kAddWeightedRows =
    ops::cpu::kernels_by_rows<AddWeightedRows<Rows>, kMaxSliceVectors>(
        [](auto vectors) -> AddWeightedRows<Rows> {
          return add_weighted_rows<Rows, decltype(vectors)::value>;
        });

template <typename Rows>
void row_values(const float* p, const typename Rows::Element* v, std::int64_t keys,
                std::int64_t head_dim, float* out) {
  for (std::int64_t c = 0; c < head_dim; c += 16 * kMaxSliceVectors) {
    const auto vectors = std::min<std::int64_t>(kMaxSliceVectors, (head_dim - c) / 16);
    kAddWeightedRows<Rows>[vectors - 1](p, v, keys, head_dim, c, out);
  }
}

// ---- AVX2 (the avx2 level): 16 registers of 8 lanes ----

// row_scores with 8 keys at a time.
template <typename Rows>
__attribute__((target("avx2,fma,f16c"))) void row_scores_avx2(const float* q,
                                                              const typename Rows::Element* k,
                                                              std::int64_t keys,
                                                              std::int64_t head_dim,
                                                              float* scores) {
  for (std::int64_t first = 0; first < keys; first += 8) {
    const std::int64_t count = std::min<std::int64_t>(8, keys - first);
    __m256 sums[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const typename Rows::Element* row =
          k + (first + (i < count ? i : 0)) * Rows::elements(head_dim);
      sums[i] = _mm256_setzero_ps();
      for (std::int64_t c = 0; c < head_dim; c += 8) {
        sums[i] = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), Rows::load8(row, c), sums[i]);
      }
    }
    _mm256_maskstore_ps(scores + first, ops::cpu::first_lanes_avx2(count),
                        ops::cpu::sum_lanes8(sums));
  }
}

// add_weighted_rows with 8 lanes: kVectors accumulators, the broadcast weight and a loaded vector
// of the row, at most 10 of the 16 registers.
template <typename Rows, int kVectors>
__attribute__((target("avx2,fma,f16c"))) void add_weighted_rows_avx2(
    const float* p, const typename Rows::Element* v, std::int64_t keys, std::int64_t head_dim,
    std::int64_t c, float* out) {
  __m256 sums[kVectors];
  for (int i = 0; i < kVectors; ++i) sums[i] = _mm256_loadu_ps(out + c + 8 * i);
  for (std::int64_t j = 0; j < keys; ++j) {
    const __m256 weight = _mm256_set1_ps(p[j]);
    const typename Rows::Element* row = v + j * Rows::elements(head_dim);
    for (int i = 0; i < kVectors; ++i) {
      sums[i] = _mm256_fmadd_ps(weight, Rows::load8(row, c + 8 * i), sums[i]);
    }
  }
  for (int i = 0; i < kVectors; ++i) _mm256_storeu_ps(out + c + 8 * i, sums[i]);
}

template <typename Rows>
constexpr std::array<AddWeightedRows<Rows>, kMaxSliceVectors> kAddWeightedRowsAvx2 =
    ops::cpu::kernels_by_rows<AddWeightedRows<Rows>, kMaxSliceVectors>(
        [](auto vectors) -> AddWeightedRows<Rows> {
          return add_weighted_rows_avx2<Rows, decltype(vectors)::value>;
        });

template <typename Rows>
void row_values_avx2(const float* p, const typename Rows::Element* v, std::int64_t keys,
                     std::int64_t head_dim, float* out) {
  for (std::int64_t c = 0; c < head_dim; c += 8 * kMaxSliceVectors) {
    const auto vectors = std::min<std::int64_t>(kMaxSliceVectors, (head_dim - c) / 8);
    kAddWeightedRowsAvx2<Rows>[vectors - 1](p, v, keys, head_dim, c, out);
  }
}

// Calls kernel(Rows{}, elements) with the Rows (above) of a run's element type `rows` and the run
// `kv` as those elements.
template <typename Kernel>
void with_rows(DType rows, const void* kv, Kernel kernel) {
  const auto* halves = static_cast<const std::uint16_t*>(kv);
  if (rows == DType::BF16) return kernel(Bf16Rows{}, halves);
  if (rows == DType::F16) return kernel(F16Rows{}, halves);
  if (rows == DType::Q8_0) return kernel(BlockRows{}, static_cast<const BlockQ8_0*>(kv));
  kernel(F32Rows{}, static_cast<const float*>(kv));
}

}  // namespace

void decode_row_scores(CpuLevel level, const float* q, const void* k, DType rows, std::int64_t keys,
                       std::int64_t head_dim, float* scores) {
  with_rows(rows, k, [&](auto format, const auto* elements) {
    using Rows = decltype(format);
    if (level >= CpuLevel::Avx512) {
      row_scores<Rows>(q, elements, keys, head_dim, scores);
    } else {
      row_scores_avx2<Rows>(q, elements, keys, head_dim, scores);
    }
  });
}

void decode_row_values(CpuLevel level, const float* p, const void* v, DType rows, std::int64_t keys,
                       std::int64_t head_dim, float* out) {
  with_rows(rows, v, [&](auto format, const auto* elements) {
    using Rows = decltype(format);
    if (level >= CpuLevel::Avx512) {
      row_values<Rows>(p, elements, keys, head_dim, out);
    } else {
      row_values_avx2<Rows>(p, elements, keys, head_dim, out);
    }
  });
}

#else

void decode_row_scores(CpuLevel, const float*, const void*, DType, std::int64_t, std::int64_t,
                       float*) {
  check(false, "decode_row_scores", "its kernels exist on x86-64 CPUs only");
}
void decode_row_values(CpuLevel, const float*, const void*, DType, std::int64_t, std::int64_t,
                       float*) {
  check(false, "decode_row_values", "its kernels exist on x86-64 CPUs only");
}

#endif  // __x86_64__

}  // namespace attnscope::ops::attention::cpu
