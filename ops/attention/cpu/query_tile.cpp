// query_tile (ops/attention/cpu/query_tile.h): a tile of query rows against a run of key and value
// rows, with AVX-512: the register-tiled products of a GEMM, without its packing of both operands
// on every call.
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
// 12 x 5 and a slow 4) was 1.12x of that.
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
#endif

namespace attnscope::ops::attention::cpu {

bool query_tile_kernels_apply(std::int64_t head_dim) {
#if defined(__x86_64__)
  return cpu_level() >= CpuLevel::Avx512 && head_dim % 16 == 0 && head_dim <= kQueryTileMaxHeadDim;
#else
  (void)head_dim;
  return false;
#endif
}

#if defined(__x86_64__)

namespace {

constexpr int kKeyGroup = 32;   // keys per register tile of scores (two vectors)
constexpr int kScoreRows = 12;  // query rows per register tile of scores
constexpr int kValueRows = 6;   // query rows per register tile of outputs
constexpr int kValueVectors = 4;

// kt[c * kKeyGroup + i] = k_i[c] for i < count (zeros past it), c < head_dim: the run's first
// `count` <= 32 key rows transposed, in 16 x 16 blocks.
__attribute__((target("avx512f"))) void transpose_keys(const float* k, std::int64_t count,
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
      for (int t = 0; t < 16; ++t) _mm512_store_ps(kt + (c + t) * kKeyGroup + half * 16, block[t]);
    }
  }
}

// s[r * ld_s + i] = q_r . k_i for r < kRows and the keys of kt's first kVectors x 16 columns
// (masked: `lanes[v]` of vector v).
template <int kRows, int kVectors>
__attribute__((target("avx512f"))) void scores_tile(const float* q, std::int64_t q_stride,
                                                    const float* kt, std::int64_t head_dim,
                                                    float* s, std::int64_t ld_s,
                                                    const __mmask16 lanes[2]) {
  __m512 acc[kRows][kVectors];
  for (auto& row : acc) {
    for (__m512& a : row) a = _mm512_setzero_ps();
  }
  for (std::int64_t c = 0; c < head_dim; ++c) {
    __m512 keys[kVectors];
    for (int v = 0; v < kVectors; ++v) keys[v] = _mm512_load_ps(kt + c * kKeyGroup + 16 * v);
    for (int r = 0; r < kRows; ++r) {
      const __m512 query = _mm512_set1_ps(q[r * q_stride + c]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(query, keys[v], acc[r][v]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVectors; ++v) {
      _mm512_mask_storeu_ps(s + r * ld_s + 16 * v, lanes[v], acc[r][v]);
    }
  }
}

// o_r (=|+=) sum_j p[r * ld_p + j] v_j[0 .. 16 kVectors) for r < kRows.
template <int kRows, int kVectors>
__attribute__((target("avx512f"))) void values_tile(const float* p, std::int64_t ld_p,
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

using ScoresTile = void (*)(const float*, std::int64_t, const float*, std::int64_t, float*,
                            std::int64_t, const __mmask16[2]);
using ValuesTile = void (*)(const float*, std::int64_t, const float*, std::int64_t, std::int64_t,
                            float*, std::int64_t, bool);

// kScoresTiles[v - 1][r - 1]: r rows, v vectors of keys.
template <int kVectors>
constexpr std::array<ScoresTile, kScoreRows> kScoresTilesOf =
    ops::cpu::kernels_by_rows<ScoresTile, kScoreRows>([](auto rows) -> ScoresTile {
      return scores_tile<decltype(rows)::value, kVectors>;
    });
constexpr std::array<std::array<ScoresTile, kScoreRows>, 2> kScoresTiles = {kScoresTilesOf<1>,
                                                                            kScoresTilesOf<2>};

// kValuesTiles[t - 1][r - 1]: r rows, t vectors of output columns.
template <int kVectors>
constexpr std::array<ValuesTile, kValueRows> kValuesTilesOf =
    ops::cpu::kernels_by_rows<ValuesTile, kValueRows>([](auto rows) -> ValuesTile {
      return values_tile<decltype(rows)::value, kVectors>;
    });
constexpr std::array<std::array<ValuesTile, kValueRows>, kValueVectors> kValuesTiles = {
    kValuesTilesOf<1>, kValuesTilesOf<2>, kValuesTilesOf<3>, kValuesTilesOf<4>};

}  // namespace

void query_tile_scores(const float* q, std::int64_t q_stride, std::int64_t rows, const float* k,
                       std::int64_t keys, std::int64_t head_dim, float* s, std::int64_t ld_s) {
  alignas(64) float kt[kQueryTileMaxHeadDim * kKeyGroup];
  for (std::int64_t first = 0; first < keys; first += kKeyGroup) {
    const std::int64_t count = std::min<std::int64_t>(kKeyGroup, keys - first);
    transpose_keys(k + first * head_dim, count, head_dim, kt);
    const __mmask16 lanes[2] = {ops::cpu::first_lanes(count),
                                ops::cpu::first_lanes(std::max<std::int64_t>(0, count - 16))};
    const auto& tiles = kScoresTiles[count > 16 ? 1 : 0];
    ops::cpu::for_each_even_tile(rows, kScoreRows, [&](std::int64_t r0, std::int64_t tile_rows) {
      tiles[static_cast<std::size_t>(tile_rows - 1)](q + r0 * q_stride, q_stride, kt, head_dim,
                                                     s + r0 * ld_s + first, ld_s, lanes);
    });
  }
}

void query_tile_values(const float* p, std::int64_t ld_p, std::int64_t rows, const float* v,
                       std::int64_t keys, std::int64_t head_dim, float* o, std::int64_t ld_o,
                       bool overwrite) {
  for (std::int64_t c = 0; c < head_dim; c += 16 * kValueVectors) {
    const std::int64_t vectors = std::min<std::int64_t>(kValueVectors, (head_dim - c) / 16);
    const auto& tiles = kValuesTiles[static_cast<std::size_t>(vectors - 1)];
    ops::cpu::for_each_even_tile(rows, kValueRows, [&](std::int64_t r0, std::int64_t tile_rows) {
      tiles[static_cast<std::size_t>(tile_rows - 1)](p + r0 * ld_p, ld_p, v + c, keys, head_dim,
                                                     o + r0 * ld_o + c, ld_o, overwrite);
    });
  }
}

#else

void query_tile_scores(const float*, std::int64_t, std::int64_t, const float*, std::int64_t,
                       std::int64_t, float*, std::int64_t) {
  check(false, "query_tile_scores", "AVX-512 exists on x86-64 CPUs only");
}
void query_tile_values(const float*, std::int64_t, std::int64_t, const float*, std::int64_t,
                       std::int64_t, float*, std::int64_t, bool) {
  check(false, "query_tile_values", "AVX-512 exists on x86-64 CPUs only");
}

#endif  // __x86_64__

}  // namespace attnscope::ops::attention::cpu
