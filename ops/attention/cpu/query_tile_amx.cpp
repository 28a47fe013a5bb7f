// query_tile_amx (ops/attention/cpu/query_tile_amx.h): a tile of query rows against its keys and
// values on AMX's bf16 tiles (ops/cpu/amx_tiles.h: TDPBF16PS adds A [16 x 32] bf16 times
// B [32 x 16] bf16 into C [16 x 16] f32).
//
// The precision: that of a bf16 model on the GPU and in PyTorch, whose q, k and v are bf16 and
// whose flash kernels round P to bf16 for P V. q, k, v and P are rounded to bf16 (to nearest,
// ties to even: |x~ - x| <= 2^-8 |x|); each product of two bf16 numbers is exact in f32, and the
// sums, the softmax and O stay f32. So a score moves by at most about 2^-7 scale sum_c |q_c k_c|
// and an output by about 2^-7 sum_j p_j |v_j| against f32's; tests/test_flash.cpp checks bounds
// of that size against a float64 reference. The limits are gemm_amx.cpp's: the tiles treat
// subnormal inputs as zero, and a value within 2^-9 of FLT_MAX rounds to infinity.
//
// Layout (every tile 16 rows of 64 bytes, 1 KB):
//  - K, once per call and kv head (amx_pack_keys): for each group of 16 keys and each step of 32
//    of the head's dims, the B tile of K^T whose row p holds the 16 keys' dims 2p and 2p + 1 side
//    by side: as 32-bit pairs, the 16 x 16 transpose of the keys' pairs (ops/cpu/transpose16.h).
//  - V, once per call and kv head (amx_pack_values): for each group of 32 keys and 16 dims, the
//    B tile whose row p holds keys 2p and 2p + 1 of each dim side by side (two rows interleaved).
//  - Q and P: bf16 rows as they are (amx_round_rows), rows rounded up to 32 with zeros; an A tile
//    is 16 of them, 32 columns wide, loaded at the rows' stride.
// The kernels keep a 32 x 32 block of S or O in four C tiles (tmm0-3), two A tiles (tmm4-5) and
// two B tiles (tmm6-7), as gemm_amx does: S block by block over 32 keys, each over the head's
// dims in steps of 32; O block by block over 32 dims, each over the keys in steps of 32, starting
// from O itself (loaded into the C tiles) unless overwriting. Blocks that run past the rows or the
// keys go through a 32 x 32 block on the stack.
// Cost per (query row, key): the same 4 head_dim FLOPs as query_tile.cpp's, at up to 16x the f32
// FMA rate; moved: K and V read once per call to be packed (2 keys head_dim bf16 written per kv
// head), Q rounded once per tile, P once per key tile.
// Measured against query_tile.cpp's f32 kernels (Emerald Rapids, 2 threads,
// docs/results/2026-12-06-amx-attention/): flash 1.54x at GPT-2's 12 heads x 512, 1.95-2.02x
// with grouped-query heads (K and V packed once for the group), 2.14x at d 128, 1.65x at the
// study's shape; with fewer than 64 query rows the packing and the tiles' latency lose
// (flash.cpp's kAmxMinRows).
#include "ops/attention/cpu/query_tile_amx.h"

#include <algorithm>
#include <atomic>

#include "ops/cpu/amx_tiles.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/cpu/dot_tile.h"
#include "ops/cpu/transpose16.h"
#endif

namespace attnscope::ops::attention::cpu {

namespace {

// A block of S or O: 2 x 2 C tiles. Q's and P's rows are padded to a multiple of it.
constexpr std::int64_t kBlock = 32;

using ops::cpu::round_up;

}  // namespace

bool amx_tile_products_apply(std::int64_t head_dim) {
#if defined(__x86_64__)
  return cpu_level() == CpuLevel::Amx && head_dim % 32 == 0 && head_dim <= kAmxMaxHeadDim;
#else
  (void)head_dim;
  return false;
#endif
}

std::int64_t amx_packed_elements(std::int64_t keys, std::int64_t head_dim) {
  return round_up(keys, kAmxKeyGroup) * head_dim;
}

std::int64_t amx_rounded_elements(std::int64_t rows, std::int64_t cols) {
  return round_up(rows, kBlock) * round_up(cols, kBlock);
}

void amx_zero_padding(std::int64_t rows, std::int64_t cols, std::uint16_t* out) {
  const std::int64_t width = round_up(cols, kBlock);
  std::fill(out + rows * width, out + round_up(rows, kBlock) * width, std::uint16_t{0});
}

#if defined(__x86_64__)

using ops::cpu::first_lanes;
using ops::cpu::kTileDepth;
using ops::cpu::kTileElements;
using ops::cpu::kTileRows;

namespace {

// The rounding (see the top) is VCVTNE(2)PS2BF16's, one instruction for 16 or 32 floats; it also
// takes subnormals to zero, as the tiles read them anyway.

// The first `valid` (<= 16) of the 16 floats at x rounded to bf16, zeros after them.
__attribute__((target("avx512f,avx512bf16"))) __m256i rounded16(const float* x,
                                                                std::int64_t valid) {
  if (valid <= 0) return _mm256_setzero_si256();
  return (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(first_lanes(valid), x));
}

// The first `valid` (<= 32) of the 32 floats at x rounded to bf16, zeros after them, as 16 pairs
// in one register (pair p: x[2p] and x[2p + 1]).
__attribute__((target("avx512f,avx512bf16"))) __m512i rounded32(const float* x,
                                                                std::int64_t valid) {
  if (valid <= 0) return _mm512_setzero_si512();
  const __m512 low = _mm512_maskz_loadu_ps(first_lanes(valid), x);
  const __m512 high =
      valid > 16 ? _mm512_maskz_loadu_ps(first_lanes(valid - 16), x + 16) : _mm512_setzero_ps();
  return (__m512i)_mm512_cvtne2ps_pbh(high, low);
}

}  // namespace

__attribute__((target("avx512f,avx512bf16"))) void amx_pack_keys(const float* k, std::int64_t keys,
                                                                 std::int64_t head_dim,
                                                                 std::uint16_t* packed) {
  const std::int64_t steps = head_dim / kTileDepth;
  const std::int64_t groups = round_up(keys, kAmxKeyGroup) / kTileRows;
  for (std::int64_t g = 0; g < groups; ++g) {
    for (std::int64_t s = 0; s < steps; ++s) {
      __m512 pairs[kTileRows];
      for (std::int64_t n = 0; n < kTileRows; ++n) {
        const std::int64_t key = g * kTileRows + n;
        pairs[n] = key < keys
                       ? _mm512_castsi512_ps(rounded32(k + key * head_dim + s * kTileDepth, 32))
                       : _mm512_setzero_ps();
      }
      ops::cpu::transpose16(pairs);  // row p: pair p of each of the 16 keys
      std::uint16_t* tile = packed + (g * steps + s) * kTileElements;
      for (std::int64_t p = 0; p < kTileRows; ++p) {
        _mm512_storeu_ps(tile + p * kTileDepth, pairs[p]);
      }
    }
  }
}

__attribute__((target("avx512f,avx512bf16"))) void amx_pack_values(const float* v,
                                                                   std::int64_t keys,
                                                                   std::int64_t head_dim,
                                                                   std::uint16_t* packed) {
  const std::int64_t column_groups = head_dim / kTileRows;
  const std::int64_t groups = round_up(keys, kAmxKeyGroup) / kAmxKeyGroup;
  for (std::int64_t g = 0; g < groups; ++g) {
    for (std::int64_t c = 0; c < column_groups; ++c) {
      std::uint16_t* tile = packed + (g * column_groups + c) * kTileElements;
      for (std::int64_t p = 0; p < kTileRows; ++p) {
        const std::int64_t even = g * kAmxKeyGroup + 2 * p;  // keys `even` and `even` + 1
        const __m256i first = even < keys ? rounded16(v + even * head_dim + c * kTileRows, 16)
                                          : _mm256_setzero_si256();
        const __m256i second = even + 1 < keys
                                   ? rounded16(v + (even + 1) * head_dim + c * kTileRows, 16)
                                   : _mm256_setzero_si256();
        const __m512i pairs = _mm512_or_si512(_mm512_cvtepu16_epi32(first),
                                              _mm512_slli_epi32(_mm512_cvtepu16_epi32(second), 16));
        _mm512_storeu_si512(tile + p * kTileDepth, pairs);
      }
    }
  }
}

__attribute__((target("avx512f,avx512bf16"))) void amx_round_row(const float* x, std::int64_t valid,
                                                                 std::int64_t cols, std::int64_t r,
                                                                 std::uint16_t* out) {
  const std::int64_t width = round_up(cols, kBlock);
  for (std::int64_t c = 0; c < width; c += 32) {
    const std::int64_t count = std::clamp<std::int64_t>(valid - c, 0, 32);
    _mm512_storeu_si512(out + r * width + c, rounded32(count > 0 ? x + c : x, count));
  }
}

void amx_round_rows(const float* x, std::int64_t stride, std::int64_t rows, std::int64_t cols,
                    std::uint16_t* out) {
  for (std::int64_t r = 0; r < rows; ++r) amx_round_row(x + r * stride, cols, cols, r, out);
  amx_zero_padding(rows, cols, out);
}

namespace {

// The four C tiles' 32 x 32 block to c (rows ld_c floats apart), or its first `rows` x `cols` of
// it through a block on the stack.
__attribute__((target("amx-tile"))) void store_block(float* c, std::int64_t ld_c, std::int64_t rows,
                                                     std::int64_t cols) {
  if (rows >= kBlock && cols >= kBlock) {
    ops::cpu::store_block_tiles(c, ld_c);
    return;
  }
  alignas(64) float block[kBlock * kBlock];
  ops::cpu::store_block_tiles(block, kBlock);
  for (std::int64_t r = 0; r < std::min(rows, kBlock); ++r) {
    std::copy_n(block + r * kBlock, std::min(cols, kBlock), c + r * ld_c);
  }
}

}  // namespace

__attribute__((target("amx-tile,amx-bf16"))) void amx_tile_scores(
    const std::uint16_t* q, std::int64_t rows, const std::uint16_t* packed_keys,
    std::int64_t first_key, std::int64_t keys, std::int64_t head_dim, float* s, std::int64_t ld_s) {
  const std::int64_t steps = head_dim / kTileDepth;
  const std::int64_t q_stride = head_dim * 2;  // bytes
  ops::cpu::configure_tiles();
  // GCC 12's _tile_loadd names no memory operand: without this compiler barrier the rounding's
  // stores could be moved past the tile loads that read them.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  for (std::int64_t r = 0; r < rows; r += kBlock) {
    const std::uint16_t* top = q + r * head_dim;
    const std::uint16_t* bottom = top + kTileRows * head_dim;
    for (std::int64_t j = 0; j < keys; j += kBlock) {
      const std::uint16_t* left = packed_keys + (first_key + j) / kTileRows * steps * kTileElements;
      const std::uint16_t* right = left + steps * kTileElements;
      ops::cpu::zero_block_tiles();
      for (std::int64_t step = 0; step < steps; ++step) {
        _tile_loadd(4, top + step * kTileDepth, q_stride);
        _tile_loadd(5, bottom + step * kTileDepth, q_stride);
        _tile_loadd(6, left + step * kTileElements, 64);
        _tile_loadd(7, right + step * kTileElements, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      store_block(s + r * ld_s + j, ld_s, rows - r, keys - j);
    }
  }
  ops::cpu::release_tiles();
}

__attribute__((target("amx-tile,amx-bf16"))) void amx_tile_values(
    const std::uint16_t* p, std::int64_t rows, const std::uint16_t* packed_values,
    std::int64_t first_key, std::int64_t keys, std::int64_t head_dim, float* o, bool overwrite) {
  const std::int64_t column_groups = head_dim / kTileRows;
  const std::int64_t ld_p = round_up(keys, kBlock);
  const std::int64_t p_stride = ld_p * 2;  // bytes
  alignas(64) float block[kBlock * kBlock];
  ops::cpu::configure_tiles();
  std::atomic_signal_fence(std::memory_order_seq_cst);  // as in amx_tile_scores, for P's stores
  for (std::int64_t r = 0; r < rows; r += kBlock) {
    const std::int64_t block_rows = std::min(kBlock, rows - r);
    const std::uint16_t* top = p + r * ld_p;
    const std::uint16_t* bottom = top + kTileRows * ld_p;
    for (std::int64_t c = 0; c < head_dim; c += kBlock) {
      float* out = o + r * head_dim + c;
      if (overwrite) {
        ops::cpu::zero_block_tiles();
      } else {
        // O's rows past `rows` are not O's (the state's running max and sum follow it): a short
        // block is loaded from a copy of its rows, zeros under them.
        const float* from = out;
        std::int64_t ld = head_dim;
        if (block_rows < kBlock) {
          std::fill_n(block, kBlock * kBlock, 0.0f);
          for (std::int64_t i = 0; i < block_rows; ++i) {
            std::copy_n(out + i * head_dim, kBlock, block + i * kBlock);
          }
          from = block;
          ld = kBlock;
        }
        // amx_tile_scores's compiler barrier, here for the stores of O and of this copy
        std::atomic_signal_fence(std::memory_order_seq_cst);
        ops::cpu::load_block_tiles(from, ld);
      }
      for (std::int64_t j = 0; j < keys; j += kAmxKeyGroup) {
        const std::uint16_t* left =
            packed_values +
            ((first_key + j) / kAmxKeyGroup * column_groups + c / kTileRows) * kTileElements;
        _tile_loadd(4, top + j, p_stride);
        _tile_loadd(5, bottom + j, p_stride);
        _tile_loadd(6, left, 64);
        _tile_loadd(7, left + kTileElements, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      store_block(out, head_dim, block_rows, kBlock);
    }
  }
  ops::cpu::release_tiles();
}

#else

void amx_pack_keys(const float*, std::int64_t, std::int64_t, std::uint16_t*) {
  check(false, "amx_pack_keys", "AMX tiles exist on x86-64 CPUs only");
}
void amx_pack_values(const float*, std::int64_t, std::int64_t, std::uint16_t*) {
  check(false, "amx_pack_values", "AMX tiles exist on x86-64 CPUs only");
}
void amx_round_row(const float*, std::int64_t, std::int64_t, std::int64_t, std::uint16_t*) {
  check(false, "amx_round_row", "AMX tiles exist on x86-64 CPUs only");
}
void amx_round_rows(const float*, std::int64_t, std::int64_t, std::int64_t, std::uint16_t*) {
  check(false, "amx_round_rows", "AMX tiles exist on x86-64 CPUs only");
}
void amx_tile_scores(const std::uint16_t*, std::int64_t, const std::uint16_t*, std::int64_t,
                     std::int64_t, std::int64_t, float*, std::int64_t) {
  check(false, "amx_tile_scores", "AMX tiles exist on x86-64 CPUs only");
}
void amx_tile_values(const std::uint16_t*, std::int64_t, const std::uint16_t*, std::int64_t,
                     std::int64_t, std::int64_t, float*, bool) {
  check(false, "amx_tile_values", "AMX tiles exist on x86-64 CPUs only");
}

#endif  // __x86_64__

}  // namespace attnscope::ops::attention::cpu
