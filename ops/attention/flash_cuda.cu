// `flash` attention on a CUDA device: FlashAttention-2's tiled kernel with online softmax, one
// launch per call; the split-KV decode path for few query rows is in flash_decode_cuda.cu.
//
// Math (attention.h): query i of head (b, h) at position p_i = kv_len - Tq + i attends to keys
// j <= p_i of kv head h / (Hq / Hkv). With x_j = scale log2(e) q_i . k_j, each query row keeps
// a running max m, a running sum l and an unnormalised output O (all f32) over key tiles:
//
//   m' = max(m, max_j x_j),  P_j = 2^(x_j - m'),  l = 2^(m - m') l + sum_j P_j,
//   O = 2^(m - m') O + sum_j P_j v_j,  m = m';           after the last tile: out_i = O / l
//
// (2^(x - m) with x in log2 units is exp(scale q.k - max): the same softmax, one exp2 each.)
//
// Each CTA owns one tile of query rows of one (b, h) and loops over key tiles from key 0 up to
// the tile's last query position: tiles entirely above the diagonal are never loaded (causal
// tile skipping); on a tile that crosses the diagonal each masked score is left out of the max
// and gets P = 0 (no mask value is ever added, so nothing can overflow in any dtype). Every
// row sees key 0 in the first tile, so m is finite from then on. Key rows at or beyond kv_len
// are never read (their shared-memory rows are zero-filled), so the unused cache rows may hold
// anything. CTAs go longest query tile first (blockIdx.x = rank * B Hq + head, rank 0 = the
// last tile), so the short tiles fill the end of the grid. The output is written once, rounded
// to the storage dtype.
//
// Two kernels, one launch per call, chosen by dtype and head dim:
//
// flash_forward_mma (f16/bf16, D = 64 or 128): tensor cores through
//   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32. 4 warps, 64 query rows per
//   CTA (16 per warp), key tiles of 64. The warp's Q fragments stay in registers for the whole
//   loop (D/16 x 4 registers); K and V tiles are staged in shared memory by cp.async, double
//   buffered (tile j+1 loads while tile j is used), rows padded by 8 elements (16 bytes) so that
//   the fragment loads below hit 32 different banks. Per tile and warp:
//     S [16 x 64] = Q K^T: (D/16) x 8 mma, B fragments read from K rows as 32-bit pairs;
//     online softmax on the S accumulators (row max and row sum across the 4 lanes of a row);
//     O [16 x D] += P V: P rounded to the storage type straight from the S accumulators into A
//       fragments (as FlashAttention does), V fragments by ldmatrix.x4.trans; 4 x (D/8) mma.
//   Shared memory: 2 buffers x (K + V) x 64 x (D + 8) x 2 bytes = 36 KiB (D = 64), 68 KiB
//   (D = 128: above 48 KiB, so the kernel's limit is raised with cudaFuncSetAttribute).
//   Registers per thread: Q D/4, O D/2, S 32, plus the K fragments ptxas keeps in flight and
//   addressing: 166 at D = 64, 236 at D = 128 (ptxas, sm_90, no spills).
//
// flash_forward_simt (every other case: f32 storage, or any head dim up to 256): the same
//   algorithm in f32 FMAs. 4 warps, 32 query rows per CTA (8 per warp), key tiles of 32. Q, K
//   and V tiles in shared memory as f32 (K rows padded by one float: lane = key reads a column
//   without bank conflicts). Per tile and warp: lane j scores key j against the warp's 8 rows
//   (Q broadcast), warp max and warp sum per row, then lane d accumulates O[., d] += P V (P
//   broadcast by shuffles). Shared memory (96 D + 32) x 4 bytes: 24.1 KiB at D = 64, 96.1 KiB
//   at D = 256 (raised limit above 48 KiB).
//
// MMA fragment layout of m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type"). Lane l of a warp: g = l / 4 (groupID), t = l % 4 (threadID_in_group). Each
// 32-bit register holds two 16-bit elements, the lower-indexed one in the low half.
//   A (16 x 16, row-major, rows = query rows, cols = k): a[0] = A[g][2t, 2t+1],
//     a[1] = A[g+8][2t, 2t+1], a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8, 2t+9].
//   B (16 x 8, "col": element pairs run along k): b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g].
//   C, D (16 x 8 f32): c[0] = C[g][2t], c[1] = C[g][2t+1], c[2] = C[g+8][2t], c[3] = C[g+8][2t+1].
// Hence, per warp (rows of its 16 query rows, relative to the tiles):
//   S = Q K^T, k-step kc (dims 16kc..16kc+15), n-block nb (keys 8nb..8nb+7): A = Q, so a[.] are
//     Q pairs at (row g or g+8, dim 16kc + 2t (+8)); B[k][n] = K[key 8nb+n][dim 16kc+k], so
//     b[0] = K[8nb+g][16kc+2t, +1] and b[1] = K[8nb+g][16kc+8+2t, +1]: contiguous pairs of a K
//     row. Accumulator s[nb][i]: row g (i < 2) or g+8 (i >= 2), key 8nb + 2t + (i % 2).
//   O += P V, k-step kk (keys 16kk..16kk+15), n-block nd (dims 8nd..8nd+7): A = P, so
//     a[0] = P[g][16kk+2t, +1] = s[2kk][0, 1], a[1] = s[2kk][2, 3], a[2] = s[2kk+1][0, 1],
//     a[3] = s[2kk+1][2, 3]. B[k][n] = V[key 16kk+k][dim 8nd+n]: b[0] = V[16kk+2t, +1][8nd+g],
//     a column pair of V, which ldmatrix .trans delivers: for an 8 x 8 block M whose row r is
//     given by lane r of the block's address group, .trans gives lane l the pair
//     {M[2t][g], M[2t+1][g]}. One ldmatrix.x4.trans over V rows 16kk..16kk+15, dims
//     16n..16n+15 (block q = l / 8 at row offset 8 (q % 2), dim offset 8 (q / 2)) yields b[0],
//     b[1] of n-block 2n and b[0], b[1] of n-block 2n+1.
//   Output: O accumulator o[nd][i] is out[row g or g+8][dim 8nd + 2t + (i % 2)].
//
// Bank conflicts: a shared row is D + 8 elements = (D + 8) / 2 words, = 4 mod 32 words for D = 64
// and 128; the K pair loads (row g, word t) hit bank 4g + t + const: 32 banks for 32 lanes. Each
// 8 x 16-byte ldmatrix block covers banks 4r .. 4r + 3 for rows r = 0..7: conflict-free. The
// cp.async stores (16 bytes per lane, 8 lanes per row) are conflict-free per quarter warp.
//
// Occupancy at the study's shape (B = 8, H = 16, T = 1024, D = 64, bf16) on an H200 (132 SMs):
// 2048 CTAs of 128 threads; 166 registers per thread allow 3 CTAs (12 warps) per SM, 36 KiB of
// shared memory would allow 6; 396 CTAs at a time, about 5 waves, longest tiles first.
//
// Cost model (B batch, Hq query heads, Tq query rows, Tk = kv_len, D head dim, s = storage bytes
// per element): 1 launch, no temporaries. Bytes: q read once, out written once (B Hq Tq D s
// each); K and V tiles read once per query tile up to the diagonal (about
// B Hq ceil(Tq / Br) (Tk - Tq/2) 2 D s, mostly from L2). FLOPs: 4 D per visible (query, key)
// pair plus the masked part of the diagonal tiles; one exp2 per score.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "ops/attention/flash_cuda.h"
#include "ops/attention/flash_decode_cuda.h"
#include "ops/cuda/device_math.cuh"
#include "profiler/scope.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::attention {

namespace {

using attnscope::cuda::check_cuda;
using attnscope::cuda::check_launch;
using attnscope::cuda::stream_of;
using ops::cuda::from_f32;
using ops::cuda::load_f32;
using ops::cuda::warp_max;
using ops::cuda::warp_sum;

constexpr const char* kWhere = "attention flash";
constexpr std::size_t kDefaultSharedBytes = 48 * 1024;

// What the tiled kernels read about one call.
struct TileShape {
  int q_heads;
  int kv_heads;
  int q_len;
  int kv_len;
  std::int64_t capacity;  // rows of the cache per kv head
  int head_dim;
  int heads;        // B Hq
  int query_tiles;  // per head
  float scale_log2;
};

// One CTA's rows and keys: blockIdx.x = rank * heads + head, rank 0 = the head's last (longest)
// query tile.
struct CtaWork {
  int head;                // b Hq + h
  int first_row;           // of the query tile
  int rows;                // query rows in the tile
  int first_position;      // of query row 0: kv_len - Tq
  int key_tiles;           // key tiles up to the tile's last query position
  std::int64_t q_offset;   // element offset of the head's query row 0 (and output row 0)
  std::int64_t kv_offset;  // element offset of the kv head's cache row 0
};

__device__ __forceinline__ CtaWork cta_work(const TileShape& s, int tile_rows, int tile_keys) {
  CtaWork w;
  w.head = static_cast<int>(blockIdx.x) % s.heads;
  const int tile = s.query_tiles - 1 - static_cast<int>(blockIdx.x) / s.heads;
  w.first_row = tile * tile_rows;
  w.rows = min(tile_rows, s.q_len - w.first_row);
  w.first_position = s.kv_len - s.q_len;
  const int last_position = w.first_position + w.first_row + w.rows - 1;
  w.key_tiles = last_position / tile_keys + 1;
  const int batch = w.head / s.q_heads;
  const int kv_head = (w.head % s.q_heads) / (s.q_heads / s.kv_heads);
  w.q_offset = static_cast<std::int64_t>(w.head) * s.q_len * s.head_dim;
  w.kv_offset = (static_cast<std::int64_t>(batch) * s.kv_heads + kv_head) * s.capacity * s.head_dim;
  return w;
}

// 2^(m - new_max): the factor that moves a state kept relative to max m onto new_max; 1 when the
// max did not change (also when both are still -inf: no key seen yet).
__device__ __forceinline__ float rescale_factor(float m, float new_max) {
  return m == new_max ? 1.0f : exp2f(m - new_max);
}

// ---------------------------------------------------------------------------------------------
// Tensor-core kernel (f16 / bf16, D = 64 or 128).

constexpr int kMmaWarps = 4;
constexpr int kMmaThreads = kMmaWarps * 32;
constexpr int kMmaRows = 16 * kMmaWarps;  // query rows per CTA
constexpr int kMmaKeys = 64;              // keys per K/V tile
constexpr int kMmaPad = 8;                // elements of padding per shared row (16 bytes)

constexpr std::size_t mma_shared_bytes(int head_dim) {
  return std::size_t{2} /*buffers*/ * 2 /*K, V*/ * kMmaKeys * (head_dim + kMmaPad) *
         sizeof(std::uint16_t);
}

// Copies 16 bytes from global to shared memory asynchronously; with valid == false nothing is
// read and the 16 bytes are zero-filled.
__device__ __forceinline__ void cp_async_16(void* shared, const void* global, bool valid) {
  const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
  const int source_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global),
               "r"(source_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most `pending` committed groups of this thread are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row) {
  const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}

// c += a b for one m16n8k16 tile (layouts in the header comment).
template <typename T>
__device__ __forceinline__ void mma_16x8x16(float (&c)[4], const std::uint32_t (&a)[4],
                                            std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to T, `low` in the low half (the element with the lower index).
template <typename T>
__device__ __forceinline__ std::uint32_t pack_pair(float low, float high) {
  std::uint32_t bits;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 pair = __floats2half2_rn(low, high);
    std::memcpy(&bits, &pair, sizeof(bits));
  } else {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
    std::memcpy(&bits, &pair, sizeof(bits));
  }
  return bits;
}

// The 32-bit pair of 16-bit elements at `p` (4-byte aligned).
__device__ __forceinline__ std::uint32_t load_pair(const void* p) {
  return *static_cast<const std::uint32_t*>(p);
}

// Max / sum over the 4 lanes that hold one fragment row (lanes 4g .. 4g + 3).
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

template <typename T, int D>
__global__ void __launch_bounds__(kMmaThreads)
    flash_forward_mma_kernel(const T* q, const T* k, const T* v, T* out, TileShape s) {
  static_assert(D % 16 == 0 && sizeof(T) == 2);
  constexpr int kStride = D + kMmaPad;  // elements per shared row
  constexpr int kTileElements = kMmaKeys * kStride;
  constexpr int kDimSteps = D / 16;         // k-steps of S = Q K^T
  constexpr int kKeyBlocks = kMmaKeys / 8;  // n-blocks of S
  constexpr int kDimBlocks = D / 8;         // n-blocks of O
  // [buffer][K, V][key][element], 16-bit elements.
  extern __shared__ __align__(16) std::uint16_t mma_tiles[];

  const CtaWork w = cta_work(s, kMmaRows, kMmaKeys);
  const T* q_head = q + w.q_offset;
  T* out_head = out + w.q_offset;
  const T* k_head = k + w.kv_offset;
  const T* v_head = v + w.kv_offset;

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4;  // groupID: fragment rows g and g + 8
  const int t = lane % 4;  // threadID_in_group: fragment column pair 2t, 2t + 1
  const int warp_first_row = w.first_row + warp * 16;
  const int row0 = warp_first_row + g;
  const int row1 = row0 + 8;
  const int position0 = w.first_position + row0;
  const int position1 = w.first_position + row1;
  const int warp_first_position = w.first_position + warp_first_row;

  // Q fragments for the whole loop; rows past Tq are zeros (never written out).
  auto q_pair = [&](int row, int col) {
    return row < s.q_len ? load_pair(q_head + static_cast<std::int64_t>(row) * D + col) : 0u;
  };
  std::uint32_t q_frag[kDimSteps][4];
#pragma unroll
  for (int kc = 0; kc < kDimSteps; ++kc) {
    const int col = kc * 16 + 2 * t;
    q_frag[kc][0] = q_pair(row0, col);
    q_frag[kc][1] = q_pair(row1, col);
    q_frag[kc][2] = q_pair(row0, col + 8);
    q_frag[kc][3] = q_pair(row1, col + 8);
  }

  float o[kDimBlocks][4] = {};
  float m0 = -INFINITY, m1 = -INFINITY;  // running max of rows g, g + 8 (log2 units)
  float l0 = 0.0f, l1 = 0.0f;            // this lane's share of the running sums

  // Stages key tile `tile` into `buffer`: 16-byte chunks, consecutive threads along a row; rows
  // at or beyond kv_len are zero-filled without reading the cache.
  auto load_tile = [&](int tile, int buffer) {
    std::uint16_t* k_tile = mma_tiles + (2 * buffer) * kTileElements;
    std::uint16_t* v_tile = k_tile + kTileElements;
    constexpr int kChunksPerRow = D / 8;
    for (int c = static_cast<int>(threadIdx.x); c < kMmaKeys * kChunksPerRow; c += kMmaThreads) {
      const int key_in_tile = c / kChunksPerRow;
      const int col = (c % kChunksPerRow) * 8;
      const int key = tile * kMmaKeys + key_in_tile;
      const bool valid = key < s.kv_len;
      const std::int64_t from = valid ? static_cast<std::int64_t>(key) * D + col : 0;
      cp_async_16(k_tile + key_in_tile * kStride + col, k_head + from, valid);
      cp_async_16(v_tile + key_in_tile * kStride + col, v_head + from, valid);
    }
  };

  load_tile(0, 0);
  cp_async_commit();
  for (int j = 0; j < w.key_tiles; ++j) {
    if (j + 1 < w.key_tiles) {
      load_tile(j + 1, (j + 1) % 2);  // into the buffer that tile j - 1 used
      cp_async_commit();
      cp_async_wait<1>();  // tile j has landed (this thread's copies)
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // ... and every thread's copies of tile j are visible
    const std::uint16_t* k_tile = mma_tiles + (2 * (j % 2)) * kTileElements;
    const std::uint16_t* v_tile = k_tile + kTileElements;

    // S = Q K^T (16 x 64 per warp).
    float sc[kKeyBlocks][4] = {};
#pragma unroll
    for (int nb = 0; nb < kKeyBlocks; ++nb) {
#pragma unroll
      for (int kc = 0; kc < kDimSteps; ++kc) {
        const std::uint16_t* k_pair = k_tile + (nb * 8 + g) * kStride + kc * 16 + 2 * t;
        mma_16x8x16<T>(sc[nb], q_frag[kc], load_pair(k_pair), load_pair(k_pair + 8));
      }
    }

    // Online softmax. A tile that ends at or before the warp's first position is fully visible.
    const int key0 = j * kMmaKeys;
    const bool diagonal = key0 + kMmaKeys - 1 > warp_first_position;
    float tile_max0 = -INFINITY, tile_max1 = -INFINITY;
#pragma unroll
    for (int nb = 0; nb < kKeyBlocks; ++nb) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int key = key0 + nb * 8 + 2 * t + i;
        sc[nb][i] *= s.scale_log2;
        sc[nb][2 + i] *= s.scale_log2;
        if (!diagonal || key <= position0) tile_max0 = fmaxf(tile_max0, sc[nb][i]);
        if (!diagonal || key <= position1) tile_max1 = fmaxf(tile_max1, sc[nb][2 + i]);
      }
    }
    const float new_max0 = fmaxf(m0, quad_max(tile_max0));
    const float new_max1 = fmaxf(m1, quad_max(tile_max1));
    const float correction0 = rescale_factor(m0, new_max0);
    const float correction1 = rescale_factor(m1, new_max1);
    m0 = new_max0;
    m1 = new_max1;
    l0 *= correction0;
    l1 *= correction1;
#pragma unroll
    for (int nd = 0; nd < kDimBlocks; ++nd) {
      o[nd][0] *= correction0;
      o[nd][1] *= correction0;
      o[nd][2] *= correction1;
      o[nd][3] *= correction1;
    }
#pragma unroll
    for (int nb = 0; nb < kKeyBlocks; ++nb) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int key = key0 + nb * 8 + 2 * t + i;
        sc[nb][i] = !diagonal || key <= position0 ? exp2f(sc[nb][i] - m0) : 0.0f;
        sc[nb][2 + i] = !diagonal || key <= position1 ? exp2f(sc[nb][2 + i] - m1) : 0.0f;
        l0 += sc[nb][i];
        l1 += sc[nb][2 + i];
      }
    }

    // O += P V (16 x D per warp), P from the S accumulators.
    const int block = lane / 8;  // which 8 x 8 block of an ldmatrix.x4 this lane addresses
    const int block_row = lane % 8;
#pragma unroll
    for (int kk = 0; kk < kMmaKeys / 16; ++kk) {
      const std::uint32_t p_frag[4] = {pack_pair<T>(sc[2 * kk][0], sc[2 * kk][1]),
                                       pack_pair<T>(sc[2 * kk][2], sc[2 * kk][3]),
                                       pack_pair<T>(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                                       pack_pair<T>(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
      for (int n = 0; n < D / 16; ++n) {
        const std::uint16_t* v_row =
            v_tile + (kk * 16 + (block % 2) * 8 + block_row) * kStride + n * 16 + (block / 2) * 8;
        std::uint32_t v_frag[4];
        ldmatrix_x4_trans(v_frag, v_row);
        mma_16x8x16<T>(o[2 * n], p_frag, v_frag[0], v_frag[1]);
        mma_16x8x16<T>(o[2 * n + 1], p_frag, v_frag[2], v_frag[3]);
      }
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }

  // out = O / l, rows past Tq left alone.
  l0 = quad_sum(l0);
  l1 = quad_sum(l1);
#pragma unroll
  for (int nd = 0; nd < kDimBlocks; ++nd) {
    const int col = nd * 8 + 2 * t;
    if (row0 < s.q_len) {
      *reinterpret_cast<std::uint32_t*>(out_head + static_cast<std::int64_t>(row0) * D + col) =
          pack_pair<T>(o[nd][0] / l0, o[nd][1] / l0);
    }
    if (row1 < s.q_len) {
      *reinterpret_cast<std::uint32_t*>(out_head + static_cast<std::int64_t>(row1) * D + col) =
          pack_pair<T>(o[nd][2] / l1, o[nd][3] / l1);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SIMT kernel (any dtype, D <= 256).

constexpr int kSimtWarps = 4;
constexpr int kSimtThreads = kSimtWarps * 32;
constexpr int kSimtRowsPerWarp = 8;
constexpr int kSimtRows = kSimtWarps * kSimtRowsPerWarp;  // query rows per CTA
constexpr int kSimtKeys = 32;                             // keys per tile: one per lane

constexpr std::size_t simt_shared_bytes(int head_dim) {
  return (std::size_t{kSimtRows} * head_dim + std::size_t{kSimtKeys} * (head_dim + 1) +
          std::size_t{kSimtKeys} * head_dim) *
         sizeof(float);
}

// DC: lane chunks of a row (D <= 32 DC); lane owns output elements lane, lane + 32, ...
template <typename T, int DC>
__global__ void __launch_bounds__(kSimtThreads)
    flash_forward_simt_kernel(const T* q, const T* k, const T* v, T* out, TileShape s) {
  // Q [32][D], K [32][D + 1], V [32][D], f32.
  extern __shared__ float simt_tiles[];
  const int d_len = s.head_dim;
  float* q_tile = simt_tiles;
  float* k_tile = q_tile + kSimtRows * d_len;
  float* v_tile = k_tile + kSimtKeys * (d_len + 1);

  const CtaWork w = cta_work(s, kSimtRows, kSimtKeys);
  const T* q_head = q + w.q_offset;
  T* out_head = out + w.q_offset;
  const T* k_head = k + w.kv_offset;
  const T* v_head = v + w.kv_offset;

  // Query rows past Tq are zeros; their results are never written.
  for (int i = static_cast<int>(threadIdx.x); i < kSimtRows * d_len; i += kSimtThreads) {
    const int row = w.first_row + i / d_len;
    q_tile[i] =
        row < s.q_len ? load_f32(q_head, static_cast<std::int64_t>(row) * d_len + i % d_len) : 0.0f;
  }

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const float* warp_q = q_tile + warp * kSimtRowsPerWarp * d_len;
  int position[kSimtRowsPerWarp];
  float m[kSimtRowsPerWarp], l[kSimtRowsPerWarp], o[kSimtRowsPerWarp][DC];
#pragma unroll
  for (int r = 0; r < kSimtRowsPerWarp; ++r) {
    position[r] = w.first_position + w.first_row + warp * kSimtRowsPerWarp + r;
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < DC; ++c) o[r][c] = 0.0f;
  }

  for (int j = 0; j < w.key_tiles; ++j) {
    __syncthreads();  // the previous tile is no longer read (and Q is staged)
    for (int i = static_cast<int>(threadIdx.x); i < kSimtKeys * d_len; i += kSimtThreads) {
      const int key_in_tile = i / d_len;
      const int d = i % d_len;
      const int key = j * kSimtKeys + key_in_tile;
      const bool valid = key < s.kv_len;
      const std::int64_t from = static_cast<std::int64_t>(key) * d_len + d;
      k_tile[key_in_tile * (d_len + 1) + d] = valid ? load_f32(k_head, from) : 0.0f;
      v_tile[i] = valid ? load_f32(v_head, from) : 0.0f;
    }
    __syncthreads();

    // Scores: lane = key of the tile, against the warp's 8 rows.
    const int key = j * kSimtKeys + lane;
    float score[kSimtRowsPerWarp] = {};
    const float* k_row = k_tile + lane * (d_len + 1);
    for (int d = 0; d < d_len; ++d) {
      const float kd = k_row[d];
#pragma unroll
      for (int r = 0; r < kSimtRowsPerWarp; ++r) {
        score[r] = fmaf(warp_q[r * d_len + d], kd, score[r]);
      }
    }
    float p[kSimtRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kSimtRowsPerWarp; ++r) {
      const bool visible = key <= position[r];
      const float x = score[r] * s.scale_log2;
      const float new_max = fmaxf(m[r], warp_max(visible ? x : -INFINITY));
      const float correction = rescale_factor(m[r], new_max);
      p[r] = visible ? exp2f(x - new_max) : 0.0f;
      l[r] = l[r] * correction + warp_sum(p[r]);
      m[r] = new_max;
#pragma unroll
      for (int c = 0; c < DC; ++c) o[r][c] *= correction;
    }

    // O += P V: lane = output element.
    for (int kj = 0; kj < kSimtKeys; ++kj) {
      float vd[DC];
#pragma unroll
      for (int c = 0; c < DC; ++c) {
        const int d = c * 32 + lane;
        vd[c] = d < d_len ? v_tile[kj * d_len + d] : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < kSimtRowsPerWarp; ++r) {
        const float pj = __shfl_sync(0xffffffffu, p[r], kj);
#pragma unroll
        for (int c = 0; c < DC; ++c) o[r][c] = fmaf(pj, vd[c], o[r][c]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kSimtRowsPerWarp; ++r) {
    const int row = w.first_row + warp * kSimtRowsPerWarp + r;
    if (row >= s.q_len) continue;
#pragma unroll
    for (int c = 0; c < DC; ++c) {
      const int d = c * 32 + lane;
      if (d < d_len) {
        out_head[static_cast<std::int64_t>(row) * d_len + d] = from_f32<T>(o[r][c] / l[r]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Host side.

enum class Path { decode, mma, simt };

struct Plan {
  Path path = Path::simt;
  FlashDecodePlan decode;
};

bool is_16_bit(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

Plan plan_of(const Context& ctx, const Call& call) {
  Plan plan;
  if (call.q_len() <= kFlashDecodeMaxQueries) {
    plan.path = Path::decode;
    plan.decode = flash_decode_plan(ctx, call);
  } else if (is_16_bit(call.q.dtype()) && (call.head_dim() == 64 || call.head_dim() == 128)) {
    plan.path = Path::mma;
  }
  return plan;
}

bool aligned_16(const Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.raw_data()) % 16 == 0;
}

// Everything forward() needs beyond validate_call(), with the reason when it is not there.
void check_supported(const Call& call, Path path) {
  check(call.q.device() == Device::CUDA, kWhere, "the cuda backend was given cpu tensors");
  const DType dtype = call.q.dtype();
  check(dtype == DType::F32 || is_16_bit(dtype), kWhere,
        "expected f32, f16 or bf16 tensors, got " + std::string(dtype_name(dtype)));
  const std::int64_t d = call.head_dim();
  check(d >= 1 && d <= kFlashMaxHeadDim, kWhere,
        "head dim " + std::to_string(d) + " is not supported (1 to 256)");
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  check(call.batch() * call.q_heads() <= kIntMax && call.k.dim(2) <= kIntMax, kWhere,
        "batch x heads and the cache length must fit in 32-bit ints");
  if (path == Path::mma) {
    check(aligned_16(call.q) && aligned_16(call.k) && aligned_16(call.v) && aligned_16(call.out),
          kWhere, "the tensor-core kernel needs 16-byte aligned q, k, v and out");
  }
}

TileShape tile_shape(const Call& call, int rows_per_tile) {
  constexpr double kLog2e = 1.4426950408889634;
  const std::int64_t heads = call.batch() * call.q_heads();
  const std::int64_t query_tiles = (call.q_len() + rows_per_tile - 1) / rows_per_tile;
  check(heads * query_tiles <= std::numeric_limits<int>::max(), kWhere,
        "too many query tiles for one grid");
  return {static_cast<int>(call.q_heads()),
          static_cast<int>(call.kv_heads()),
          static_cast<int>(call.q_len()),
          static_cast<int>(call.kv_len),
          call.k.dim(2),
          static_cast<int>(call.head_dim()),
          static_cast<int>(heads),
          static_cast<int>(query_tiles),
          static_cast<float>(static_cast<double>(call.scale) * kLog2e)};
}

// Launches `kernel` over the call's query tiles with `shared_bytes` of dynamic shared memory,
// raising the kernel's limit first when that is above the default 48 KiB.
template <typename T>
void launch_tiles(Context& ctx, const Call& call,
                  void (*kernel)(const T*, const T*, const T*, T*, TileShape), int rows_per_tile,
                  int threads, std::size_t shared_bytes, const char* name) {
  const TileShape shape = tile_shape(call, rows_per_tile);
  const std::int64_t blocks = static_cast<std::int64_t>(shape.heads) * shape.query_tiles;
  if (blocks == 0) return;
  if (shared_bytes > kDefaultSharedBytes) {
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared_bytes)),
               name);
  }
  kernel<<<static_cast<unsigned int>(blocks), threads, shared_bytes, stream_of(ctx)>>>(
      static_cast<const T*>(call.q.raw_data()), static_cast<const T*>(call.k.raw_data()),
      static_cast<const T*>(call.v.raw_data()), static_cast<T*>(call.out.raw_data()), shape);
  check_launch(name);
}

class FlashCuda final : public Backend {
 public:
  std::string_view name() const override { return "flash"; }
  std::string_view summary() const override {
    return "tiled online softmax with causal tile skipping; split-KV (flash-decoding) for decode";
  }

  CostModel cost_model(const Context& ctx, const Call& call) const override {
    const Plan plan = plan_of(ctx, call);
    if (plan.path == Path::decode) return {plan.decode.partial_bytes, 2};
    return {0, 1};
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.flash", "attention");
    validate_call(call);
    const Plan plan = plan_of(ctx, call);
    check_supported(call, plan.path);
    if (plan.path == Path::decode) {
      flash_decode_forward(ctx, call, plan.decode);
      return;
    }
    ops::cuda::with_storage_type(call.q.dtype(), kWhere, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float>) {
        forward_simt<T>(ctx, call);
      } else if (plan.path == Path::mma) {
        profiler::Scope step(ctx, "flash.forward", "kernel");
        if (call.head_dim() == 64) {
          launch_tiles<T>(ctx, call, flash_forward_mma_kernel<T, 64>, kMmaRows, kMmaThreads,
                          mma_shared_bytes(64), "flash_forward_mma_kernel<64>");
        } else {
          launch_tiles<T>(ctx, call, flash_forward_mma_kernel<T, 128>, kMmaRows, kMmaThreads,
                          mma_shared_bytes(128), "flash_forward_mma_kernel<128>");
        }
      } else {
        forward_simt<T>(ctx, call);
      }
    });
  }

 private:
  template <typename T>
  static void forward_simt(Context& ctx, const Call& call) {
    profiler::Scope step(ctx, "flash.forward_simt", "kernel");
    with_lane_chunks(call.head_dim(), [&](auto chunks_per_lane) {
      constexpr int kChunks = decltype(chunks_per_lane)::value;
      launch_tiles<T>(ctx, call, flash_forward_simt_kernel<T, kChunks>, kSimtRows, kSimtThreads,
                      simt_shared_bytes(static_cast<int>(call.head_dim())),
                      "flash_forward_simt_kernel");
    });
  }
};

}  // namespace

const Backend& flash_cuda_backend() {
  static const FlashCuda backend;
  return backend;
}

}  // namespace attnscope::ops::attention
