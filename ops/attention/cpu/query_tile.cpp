// query_tile (ops/attention/cpu/query_tile.h): a tile of query rows against a run of key and value
// rows, with AVX-512 or AVX2: the register-tiled products of a GEMM, without its packing of both
// operands on every call. Below with AVX-512's 16 lanes; AVX2's kernels are the same with 8 lanes
// in 16 registers (scores 6 rows x 16 keys and values 6 rows x 16 columns, 12 accumulators each).
//
// Scores S = Q K^T: 32 keys at a time (16 when a run has no more, a paged block), their rows
// transposed 16 x 16 floats at a time (ops/cpu/transpose16.h) into K^T [head_dim, 32] on the
// stack, then 12 query rows at a time against it: per dimension c two vectors of K^T loaded, each
// row's q[c] broadcast from the query row itself (no copy), 24 multiply-adds into 12 x 32 scores
// held in registers, stored once.
// Values O += P V: V's rows are already what the product needs (a key's head_dim values side by
// side), so nothing is packed: 6 query rows x 64 output columns (4 vectors) in registers; per key
// its 4 vectors of V loaded, each row's p_j broadcast, 24 multiply-adds. Wider heads take their
// columns 64 at a time.
// Cost per (query row, key): 2 head_dim multiply-adds, as Eigen's products; moved: K transposed
// once per 32 keys for the whole tile, V read from L1/L2 once per 6 query rows, and S written
// once (Eigen zeroes its product's destination first, then adds into it).
// Measured against Eigen's products (Zen 4, 2 threads, 3 interleaved rounds,
// docs/results/2026-12-05-flash-query-tile/): flash 1.26x at the study's shape, 1.29x at GPT-2's
// 12 heads x 512, 1.27x at d 128, 1.23x paged in blocks of 16 (the 16-key scores); the kernels
// then run at about 85% of the FMA peak. Rows in even tiles (64 as 11, 11, 11, 11, 10, 10, not
// 12 x 5 and a slow 4) was 1.12x of that. At the avx2 level (Zen 3, 2 threads, a noisy shared
// machine: interleaved runs, docs/results/2026-12-07-avx2-query-tile/): the op 1.09-1.46x in
// medians of 3 to 8 rounds (12 x 512, the study's shape, d 128, paged), the two kernels 63% of
// its samples; too little of a pp512 or pp1024 to tell from that machine's noise.
#include "ops/attention/cpu/query_tile.h"

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

bool query_tile_kernels_apply(CpuLevel level, std::int64_t head_dim) {
#if defined(__x86_64__)
  return level >= CpuLevel::Avx2 && head_dim % 16 == 0 && head_dim <= kQueryTileMaxHeadDim;
#else
  (void)level;
  (void)head_dim;
  return false;
#endif
}

#if defined(__x86_64__)

namespace {

// ---- AVX-512 (the avx512 levels): 32 registers of 16 lanes ----
// Scores: 12 query rows x 32 keys (two vectors), 24 accumulators. Values: 6 rows x 64 output
// columns (four vectors), 24 accumulators.
constexpr int kAvx512KeyGroup = 32;

// kt[c * 32 + i] = k_i[c] for i < count (zeros past it), c < head_dim: the run's first `count`
// <= 32 key rows transposed, in 16 x 16 blocks.
__attribute__((target("avx512f"))) void transpose_keys_avx512(const float* k, std::int64_t count,
                                                              std::int64_t head_dim, float* kt) {
  for (int half = 0; half * 16 < count; ++half) {
    for (std::int64_t c = 0; c < head_dim; c += 16) {
      __m512 block[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        const std::int64_t key = half * 16 + i;
        block[i] = key < count ? _mm512_loadu_ps(k + key * head_dim + c) : _mm512_setzero_ps();
      }
      ops::cpu::transpose16(block);
#pragma GCC unroll 16
      for (int t = 0; t < 16; ++t) {
        _mm512_store_ps(kt + (c + t) * kAvx512KeyGroup + half * 16, block[t]);
      }
    }
  }
}

// s[r * ld_s + i] = q_r . k_i for r < kRows and i < keys, the keys in kt's first kVectors x 16
// columns.
template <int kRows, int kVectors>
__attribute__((target("avx512f"))) void scores_tile_avx512(const float* q, std::int64_t q_stride,
                                                           const float* kt, std::int64_t head_dim,
                                                           std::int64_t keys, float* s,
                                                           std::int64_t ld_s) {
  __m512 acc[kRows][kVectors];
  for (auto& row : acc) {
    for (__m512& a : row) a = _mm512_setzero_ps();
  }
  for (std::int64_t c = 0; c < head_dim; ++c) {
    __m512 key[kVectors];
    for (int v = 0; v < kVectors; ++v) key[v] = _mm512_load_ps(kt + c * kAvx512KeyGroup + 16 * v);
    for (int r = 0; r < kRows; ++r) {
      const __m512 query = _mm512_set1_ps(q[r * q_stride + c]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(query, key[v], acc[r][v]);
    }
  }
  for (int v = 0; v < kVectors; ++v) {
    const __mmask16 lanes = ops::cpu::first_lanes(std::max<std::int64_t>(0, keys - 16 * v));
    for (int r = 0; r < kRows; ++r) _mm512_mask_storeu_ps(s + r * ld_s + 16 * v, lanes, acc[r][v]);
  }
}

// o_r (=|+=) sum_j p[r * ld_p + j] v_j[0 .. 16 kVectors) for r < kRows.
template <int kRows, int kVectors>
__attribute__((target("avx512f"))) void values_tile_avx512(const float* p, std::int64_t ld_p,
                                                           const float* v, std::int64_t keys,
                                                           std::int64_t head_dim, float* o,
                                                           std::int64_t ld_o, bool overwrite) {
  __m512 acc[kRows][kVectors];
  for (auto& row : acc) {
    for (__m512& a : row) a = _mm512_setzero_ps();
  }
  for (std::int64_t j = 0; j < keys; ++j) {
    __m512 value[kVectors];
    for (int t = 0; t < kVectors; ++t) value[t] = _mm512_loadu_ps(v + j * head_dim + 16 * t);
    for (int r = 0; r < kRows; ++r) {
      const __m512 weight = _mm512_set1_ps(p[r * ld_p + j]);
      for (int t = 0; t < kVectors; ++t) acc[r][t] = _mm512_fmadd_ps(weight, value[t], acc[r][t]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kVectors; ++t) {
      float* out = o + r * ld_o + 16 * t;
      _mm512_storeu_ps(out, overwrite ? acc[r][t] : _mm512_add_ps(acc[r][t], _mm512_loadu_ps(out)));
    }
  }
}

// ---- AVX2 (the avx2 level): 16 registers of 8 lanes ----
// Scores: 6 query rows x 16 keys (two vectors): 12 accumulators, two key vectors and a broadcast
// query value, 15 of the 16 registers (the GEMM's 6 x 16 tile, ops/cpu/gemm.cpp). Values: 6 rows
// x 16 output columns, the same 12 accumulators. As there, the broadcast is _mm256_set1_ps of a
// loaded float: ops/cpu/gemm.cpp says why not _mm256_broadcast_ss.
constexpr int kAvx2KeyGroup = 16;

// kt[c * 16 + i] = k_i[c] for i < count (zeros past it), c < head_dim: the run's first `count`
// <= 16 key rows transposed, in 8 x 8 blocks.
__attribute__((target("avx2,fma"))) void transpose_keys_avx2(const float* k, std::int64_t count,
                                                             std::int64_t head_dim, float* kt) {
  for (int half = 0; half * 8 < count; ++half) {
    for (std::int64_t c = 0; c < head_dim; c += 8) {
      __m256 block[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const std::int64_t key = half * 8 + i;
        block[i] = key < count ? _mm256_loadu_ps(k + key * head_dim + c) : _mm256_setzero_ps();
      }
      ops::cpu::transpose8(block);
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t)
        _mm256_store_ps(kt + (c + t) * kAvx2KeyGroup + half * 8, block[t]);
    }
  }
}

// scores_tile_avx512 with 8-lane vectors: the keys in kt's first kVectors x 8 columns.
template <int kRows, int kVectors>
__attribute__((target("avx2,fma"))) void scores_tile_avx2(const float* q, std::int64_t q_stride,
                                                          const float* kt, std::int64_t head_dim,
                                                          std::int64_t keys, float* s,
                                                          std::int64_t ld_s) {
  __m256 acc[kRows][kVectors];
  for (auto& row : acc) {
    for (__m256& a : row) a = _mm256_setzero_ps();
  }
  for (std::int64_t c = 0; c < head_dim; ++c) {
    __m256 key[kVectors];
    for (int v = 0; v < kVectors; ++v) key[v] = _mm256_load_ps(kt + c * kAvx2KeyGroup + 8 * v);
    for (int r = 0; r < kRows; ++r) {
      const __m256 query = _mm256_set1_ps(q[r * q_stride + c]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm256_fmadd_ps(query, key[v], acc[r][v]);
    }
  }
  for (int v = 0; v < kVectors; ++v) {
    const __m256i lanes = ops::cpu::first_lanes_avx2(keys - 8 * v);
    for (int r = 0; r < kRows; ++r) _mm256_maskstore_ps(s + r * ld_s + 8 * v, lanes, acc[r][v]);
  }
}

// values_tile_avx512 with 8-lane vectors: output columns [0, 8 kVectors).
template <int kRows, int kVectors>
__attribute__((target("avx2,fma"))) void values_tile_avx2(const float* p, std::int64_t ld_p,
                                                          const float* v, std::int64_t keys,
                                                          std::int64_t head_dim, float* o,
                                                          std::int64_t ld_o, bool overwrite) {
  __m256 acc[kRows][kVectors];
  for (auto& row : acc) {
    for (__m256& a : row) a = _mm256_setzero_ps();
  }
  for (std::int64_t j = 0; j < keys; ++j) {
    __m256 value[kVectors];
    for (int t = 0; t < kVectors; ++t) value[t] = _mm256_loadu_ps(v + j * head_dim + 8 * t);
    for (int r = 0; r < kRows; ++r) {
      const __m256 weight = _mm256_set1_ps(p[r * ld_p + j]);
      for (int t = 0; t < kVectors; ++t) acc[r][t] = _mm256_fmadd_ps(weight, value[t], acc[r][t]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kVectors; ++t) {
      float* out = o + r * ld_o + 8 * t;
      _mm256_storeu_ps(out, overwrite ? acc[r][t] : _mm256_add_ps(acc[r][t], _mm256_loadu_ps(out)));
    }
  }
}

// ---- The tiling, for either width (Width: Avx512Tiles or Avx2Tiles) ----

using TransposeKeys = void (*)(const float*, std::int64_t, std::int64_t, float*);
using ScoresTile = void (*)(const float*, std::int64_t, const float*, std::int64_t, std::int64_t,
                            float*, std::int64_t);
using ValuesTile = void (*)(const float*, std::int64_t, const float*, std::int64_t, std::int64_t,
                            float*, std::int64_t, bool);

// kernels[v - 1][r - 1]: r rows, v vectors (of keys, or of output columns).
template <typename Kernel, int kRows, int kVectors, typename Make>
constexpr auto kernels_by_rows_and_vectors(Make make) {
  return [&]<std::size_t... kIndex>(std::index_sequence<kIndex...>) {
    return std::array<std::array<Kernel, kRows>, kVectors>{
        ops::cpu::kernels_by_rows<Kernel, kRows>([&](auto rows) {
          return make(rows, std::integral_constant<int, static_cast<int>(kIndex) + 1>{});
        })...};
  }
  (std::make_index_sequence<kVectors>());
}

// What the two products need of a vector width: its lanes, key group (two vectors of keys per
// score tile), tile rows and the kernels.
struct Avx512Tiles {
  static constexpr int kLanes = 16;
  static constexpr int kKeyGroup = kAvx512KeyGroup;
  static constexpr int kScoreRows = 12;
  static constexpr int kValueRows = 6;
  static constexpr int kValueVectors = 4;
  static constexpr TransposeKeys transpose_keys = transpose_keys_avx512;
  static constexpr auto scores_tiles =
      kernels_by_rows_and_vectors<ScoresTile, kScoreRows, 2>([](auto rows, auto vectors) {
        return ScoresTile{scores_tile_avx512<decltype(rows)::value, decltype(vectors)::value>};
      });
  static constexpr auto values_tiles =
      kernels_by_rows_and_vectors<ValuesTile, kValueRows, kValueVectors>(
          [](auto rows, auto vectors) {
            return ValuesTile{values_tile_avx512<decltype(rows)::value, decltype(vectors)::value>};
          });
};

struct Avx2Tiles {
  static constexpr int kLanes = 8;
  static constexpr int kKeyGroup = kAvx2KeyGroup;
  static constexpr int kScoreRows = 6;
  static constexpr int kValueRows = 6;
  static constexpr int kValueVectors = 2;
  static constexpr TransposeKeys transpose_keys = transpose_keys_avx2;
  static constexpr auto scores_tiles =
      kernels_by_rows_and_vectors<ScoresTile, kScoreRows, 2>([](auto rows, auto vectors) {
        return ScoresTile{scores_tile_avx2<decltype(rows)::value, decltype(vectors)::value>};
      });
  static constexpr auto values_tiles =
      kernels_by_rows_and_vectors<ValuesTile, kValueRows, kValueVectors>(
          [](auto rows, auto vectors) {
            return ValuesTile{values_tile_avx2<decltype(rows)::value, decltype(vectors)::value>};
          });
};

template <typename Width>
void scores_in_tiles(const float* q, std::int64_t q_stride, std::int64_t rows, const float* k,
                     std::int64_t keys, std::int64_t head_dim, float* s, std::int64_t ld_s) {
  alignas(64) float kt[kQueryTileMaxHeadDim * Width::kKeyGroup];
  for (std::int64_t first = 0; first < keys; first += Width::kKeyGroup) {
    const std::int64_t count = std::min<std::int64_t>(Width::kKeyGroup, keys - first);
    Width::transpose_keys(k + first * head_dim, count, head_dim, kt);
    const auto& tiles = Width::scores_tiles[count > Width::kLanes ? 1 : 0];
    ops::cpu::for_each_even_tile(rows, Width::kScoreRows, [&](std::int64_t r0, std::int64_t n) {
      tiles[static_cast<std::size_t>(n - 1)](q + r0 * q_stride, q_stride, kt, head_dim, count,
                                             s + r0 * ld_s + first, ld_s);
    });
  }
}

template <typename Width>
void values_in_tiles(const float* p, std::int64_t ld_p, std::int64_t rows, const float* v,
                     std::int64_t keys, std::int64_t head_dim, float* o, std::int64_t ld_o,
                     bool overwrite) {
  constexpr std::int64_t kColumns = Width::kLanes * Width::kValueVectors;
  for (std::int64_t c = 0; c < head_dim; c += kColumns) {
    const std::int64_t vectors =
        std::min<std::int64_t>(Width::kValueVectors, (head_dim - c) / Width::kLanes);
    const auto& tiles = Width::values_tiles[static_cast<std::size_t>(vectors - 1)];
    ops::cpu::for_each_even_tile(rows, Width::kValueRows, [&](std::int64_t r0, std::int64_t n) {
      tiles[static_cast<std::size_t>(n - 1)](p + r0 * ld_p, ld_p, v + c, keys, head_dim,
                                             o + r0 * ld_o + c, ld_o, overwrite);
    });
  }
}

}  // namespace

void query_tile_scores(CpuLevel level, const float* q, std::int64_t q_stride, std::int64_t rows,
                       const float* k, std::int64_t keys, std::int64_t head_dim, float* s,
                       std::int64_t ld_s) {
  if (level >= CpuLevel::Avx512) {
    scores_in_tiles<Avx512Tiles>(q, q_stride, rows, k, keys, head_dim, s, ld_s);
  } else {
    scores_in_tiles<Avx2Tiles>(q, q_stride, rows, k, keys, head_dim, s, ld_s);
  }
}

void query_tile_values(CpuLevel level, const float* p, std::int64_t ld_p, std::int64_t rows,
                       const float* v, std::int64_t keys, std::int64_t head_dim, float* o,
                       std::int64_t ld_o, bool overwrite) {
  if (level >= CpuLevel::Avx512) {
    values_in_tiles<Avx512Tiles>(p, ld_p, rows, v, keys, head_dim, o, ld_o, overwrite);
  } else {
    values_in_tiles<Avx2Tiles>(p, ld_p, rows, v, keys, head_dim, o, ld_o, overwrite);
  }
}

#else

void query_tile_scores(CpuLevel, const float*, std::int64_t, std::int64_t, const float*,
                       std::int64_t, std::int64_t, float*, std::int64_t) {
  check(false, "query_tile_scores", "its kernels exist on x86-64 CPUs only");
}
void query_tile_values(CpuLevel, const float*, std::int64_t, std::int64_t, const float*,
                       std::int64_t, std::int64_t, float*, std::int64_t, bool) {
  check(false, "query_tile_values", "its kernels exist on x86-64 CPUs only");
}

#endif  // __x86_64__

}  // namespace attnscope::ops::attention::cpu
