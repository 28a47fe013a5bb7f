// The tensor-core kernel of `flash` on a GPU (flash.cpp states the algorithm, flash_kernels.cuh
// what the tiled kernels share): FlashAttention-2's forward pass for f16/bf16 storage at head
// dims 64 and 128, one launch per call.
//
// Tensor cores through mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32. 4 warps,
// 64 query rows per CTA (16 per warp), key tiles of 64. The warp's Q fragments stay in registers
// for the whole loop (D/16 x 4 registers); K and V tiles are staged in shared memory by
// cp.async, double buffered (tile j+1 loads while tile j is used), rows padded by 8 elements (16
// bytes) so that the fragment loads below hit 32 different banks. Per tile and warp:
//   S [16 x 64] = Q K^T: (D/16) x 8 mma, B fragments read from K rows as 32-bit pairs;
//   online softmax on the S accumulators (row max and row sum across the 4 lanes of a row);
//   O [16 x D] += P V: P rounded to the storage type straight from the S accumulators into A
//     fragments (as FlashAttention does), V fragments by ldmatrix.x4.trans; 4 x (D/8) mma.
// Shared memory: 2 buffers x (K + V) x 64 x (D + 8) x 2 bytes = 36 KiB (D = 64), 68 KiB
// (D = 128: above 48 KiB, so the kernel's limit is raised with cudaFuncSetAttribute).
// Registers per thread: Q D/4, O D/2, S 32, plus the K fragments ptxas keeps in flight and
// addressing: 166 at D = 64, 236 at D = 128 (ptxas, sm_90, no spills).
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
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ops/attention/cuda/flash_kernels.cuh"
#include "ops/cuda/device_math.cuh"

namespace attnscope::ops::attention::cuda {

namespace {

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
    flash_forward_mma_kernel(const T* q, const T* k, const T* v, T* out, FlashShape s) {
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
    const float correction0 = update_running_max(m0, quad_max(tile_max0));
    const float correction1 = update_running_max(m1, quad_max(tile_max1));
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

bool aligned_16(const Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.raw_data()) % 16 == 0;
}

}  // namespace

void flash_tiled_mma(Context& ctx, const Call& call) {
  check(aligned_16(call.q) && aligned_16(call.k) && aligned_16(call.v) && aligned_16(call.out),
        "attention flash", "the tensor-core kernel needs 16-byte aligned q, k, v and out");
  const bool is_d64 = call.head_dim() == 64;
  check(is_d64 || call.head_dim() == 128, "attention flash",
        "the tensor-core kernel is built for head dims 64 and 128");
  ops::cuda::with_storage_type(call.q.dtype(), "attention flash", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      throw Error("attention flash", "the tensor-core kernel takes f16 or bf16, not f32");
    } else if (is_d64) {
      launch_tiles<T>(ctx, call, flash_forward_mma_kernel<T, 64>, kMmaRows, kMmaThreads,
                      mma_shared_bytes(64), "flash_forward_mma_kernel<64>");
    } else {
      launch_tiles<T>(ctx, call, flash_forward_mma_kernel<T, 128>, kMmaRows, kMmaThreads,
                      mma_shared_bytes(128), "flash_forward_mma_kernel<128>");
    }
  });
}

}  // namespace attnscope::ops::attention::cuda
