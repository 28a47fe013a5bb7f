// decode_lanes_avx2 (ops/cpu/decode_lanes_avx2.h): a batch's decode step through a linear layer
// with f32, 16-bit or q8_0 weights at the avx2 level, the input rows in the vector lanes.
//
// The math is every linear kernel's: y[r][o] = b[o] + sum_k x[r][k] W[o][k]. The avx2 tiles
// (dot_tile.h) put k in the lanes: 2 weight rows against up to 6 input rows, so each input vector
// loaded feeds 2 multiply-adds (8 loads per 12), and a batch of more than 6 rows walks every pair
// of weight rows again per further tile. Here the operands trade places, as the q8_0 decode
// kernel of the avx512vnni level does (decode_q8_0_vnni.cpp): x is transposed once per call into
// tiles of 16 rows (lanes[k][i] = x[i][k], zeros past the last row; plan_tiles below), and a kernel
// takes a group of weight rows against one tile, per k loading the tile's 16 inputs as two vectors
// and broadcasting each weight W[o][k] straight from its row as stored: 6 weight rows x 16 input
// rows in 12 accumulators, 8 loads per 12 multiply-adds, two of them vectors from a tile that stays
// in L1 or L2. It is the prefill GEMM's 6 x 16 micro-kernel (gemm.cpp) with the weights in place of
// its packed panel, so W is never packed. A tile of 8 rows (a batch's odd vector) takes one vector
// against 12 weight rows instead. A group is 12 weight rows: two 6-row kernels per tile of 16, one
// 12-row kernel per tile of 8; the group's rows stay in L1 or L2 while the tiles go by.
// 16-bit and q8_0 weights: the group's rows are widened or dequantized to f32 into a scratch first
// (exact; element_rows.h), then the same kernels read the scratch. So x stays f32 with q8_0
// weights too, as in this level's q8_0 prefill, where the other q8_0 decode kernels quantize it
// (linear_q8_0.h: q8_0_quantizes_x).
// The weights are 12 row streams the hardware prefetcher may not all follow: while multiplying a
// group, the kernel asks for the next group's rows into L2 (prefetch_weights, output_blocks.h), a
// line of each every 16 k, as the q8_0 lanes kernel does.
// Cost: x transposed once per call (rows x in floats), W read from memory once, 2 in outputs
// multiply-adds per 8 lanes of input rows (rows rounded up to 8; the last tile computes its empty
// lanes).
// Measured against the avx2 tiles and the GEMM (AMD EPYC Zen 3, 2 threads, synthetic:gpt2,
// interleaved rounds): decode_lanes_avx2.h and output_blocks.h (gemm_min_rows) say from and up
// to how many rows it runs, with the numbers. A decode step of 16 rows through GPT-2's f32
// linear layers took ~100 GFLOP/s on the tiles, half the two cores' FMA peak, and ~150 here.
//
// Error: the tiles' (every product in f32, summed over k in another order); with q8_0 weights
// that of the f32 product of x with the dequantized weights.
#include "ops/cpu/decode_lanes_avx2.h"

#include <algorithm>
#include <array>
#include <vector>

#include "ops/cpu/element_rows.h"
#include "ops/cpu/output_blocks.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::ops::cpu {

#if defined(__x86_64__)

namespace {

constexpr int kMaxVectors = 2;  // a tile's input rows: 1 or 2 vectors of 8
constexpr int kGroup = 12;      // weight rows per group: 12 / vectors per kernel call

// Which input rows a tile holds: vectors [first_vector, first_vector + vectors) of 8 rows.
struct Tile {
  std::int64_t first_vector;
  int vectors;
};

// The tiles of a batch: its rows in vectors of 8 (the last one padded with zeros), two vectors a
// tile, an odd one left alone (for_each_even_tile): 16 rows are one tile of 2, 24 one of 1 and one
// of 2, 63 four of 2.
std::vector<Tile> plan_tiles(std::int64_t rows) {
  std::vector<Tile> tiles;
  for_each_even_tile((rows + 7) / 8, kMaxVectors, [&](std::int64_t first, std::int64_t count) {
    tiles.push_back({first, static_cast<int>(count)});
  });
  return tiles;
}

// x [rows, in] transposed tile by tile: a tile of v vectors starting at row 8 f holds, from float
// 8 f in on, lanes[k 8 v + i] = x[8 f + i][k] (zeros past the last row).
void arrange_rows(const float* x, std::int64_t rows, std::int64_t in,
                  const std::vector<Tile>& tiles, std::vector<float>& lanes) {
  const std::int64_t padded_rows = tiles.back().first_vector * 8 + tiles.back().vectors * 8;
  lanes.assign(static_cast<std::size_t>(padded_rows * in), 0.0f);
  for (const Tile& tile : tiles) {
    const std::int64_t first_row = tile.first_vector * 8, width = 8 * tile.vectors;
    float* dst = lanes.data() + first_row * in;
    for (std::int64_t i = 0; i < std::min(width, rows - first_row); ++i) {
      const float* row = x + (first_row + i) * in;
      for (std::int64_t k = 0; k < in; ++k) dst[k * width + i] = row[k];
    }
  }
}

// dots[j][i] = W row j . tile row i, for j < kOutputs (W's rows `in` apart) and i < 8 kVectors;
// meanwhile the first next_rows rows of the next group (`next`, next_row_bytes apart) are asked
// into L2.
template <int kVectors, int kOutputs>
__attribute__((target("avx2,fma"))) void group_kernel(const float* tile, const float* w,
                                                      std::int64_t in, const char* next,
                                                      int next_rows, std::int64_t next_row_bytes,
                                                      float (*dots)[8 * kMaxVectors]) {
  constexpr std::int64_t kLineFloats = 16;
  constexpr int kWidth = 8 * kVectors;
  __m256 acc[kOutputs][kVectors];
  for (auto& row : acc) {
    for (__m256& a : row) a = _mm256_setzero_ps();
  }
  for (std::int64_t line = 0; line < in; line += kLineFloats) {
    for (int j = 0; j < next_rows; ++j) {
      prefetch_weights(next + j * next_row_bytes + line * next_row_bytes / in);
    }
    const std::int64_t end = std::min(in, line + kLineFloats);
    for (std::int64_t k = line; k < end; ++k) {
      __m256 inputs[kVectors];
      for (int v = 0; v < kVectors; ++v) inputs[v] = _mm256_loadu_ps(tile + k * kWidth + 8 * v);
      for (int j = 0; j < kOutputs; ++j) {
        // A loaded float broadcast, not _mm256_broadcast_ss: gemm.cpp's tile kernel says why.
        const __m256 weight = _mm256_set1_ps(w[j * in + k]);
        for (int v = 0; v < kVectors; ++v) {
          acc[j][v] = _mm256_fmadd_ps(weight, inputs[v], acc[j][v]);
        }
      }
    }
  }
  for (int j = 0; j < kOutputs; ++j) {
    for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(dots[j] + 8 * v, acc[j][v]);
  }
}

// The kernels of a tile of kVectors, by the number of weight rows they take (a group's last may
// have fewer than 12 / kVectors).
using GroupKernel = void (*)(const float*, const float*, std::int64_t, const char*, int,
                             std::int64_t, float (*)[8 * kMaxVectors]);
template <int kVectors>
constexpr std::array<GroupKernel, kGroup / kVectors> kGroupKernels =
    kernels_by_rows<GroupKernel, kGroup / kVectors>([](auto outputs) -> GroupKernel {
      return group_kernel<kVectors, decltype(outputs)::value>;
    });

// dots[j][i] for the group's `outputs` weight rows (at w, f32) against one tile, while the next
// group's `next_rows` rows (stored at `next`) are asked into L2, each call the rows matching its
// own.
void group_against_tile(const float* tile, int vectors, const float* w, std::int64_t in,
                        int outputs, const char* next, int next_rows, std::int64_t next_row_bytes,
                        float (*dots)[8 * kMaxVectors]) {
  const int per_call = kGroup / vectors;
  for (int j = 0; j < outputs; j += per_call) {
    const int count = std::min(per_call, outputs - j);
    const GroupKernel kernel = vectors == 2 ? kGroupKernels<2>[static_cast<std::size_t>(count - 1)]
                                            : kGroupKernels<1>[static_cast<std::size_t>(count - 1)];
    const int prefetched = std::clamp(next_rows - j, 0, count);
    kernel(tile, w + j * in, in, next + (prefetched > 0 ? j * next_row_bytes : 0), prefetched,
           next_row_bytes, dots + j);
  }
}

}  // namespace

void decode_lanes_avx2(const Context& ctx, const float* x, const void* w, DType weights,
                       const float* b, float* y, std::int64_t rows, std::int64_t in,
                       std::int64_t outputs, bool accumulate) {
  check(weights == DType::F32 || weights == DType::F16 || weights == DType::BF16 ||
            weights == DType::Q8_0,
        "decode_lanes_avx2", "weights must be f32, f16, bf16 or q8_0");
  const auto row_bytes = static_cast<std::int64_t>(storage_bytes(weights, in));
  const std::vector<Tile> tiles = plan_tiles(rows);
  // The calling thread's transposed x, kept between calls; the workers read it through `lanes`.
  thread_local std::vector<float> arranged;
  arrange_rows(x, rows, in, tiles, arranged);
  const float* const lanes = arranged.data();
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
    alignas(64) float dots[kGroup][8 * kMaxVectors];
    // Weights not in f32: each worker's group rows as f32, kept between calls.
    thread_local std::vector<float> widened;
    if (weights != DType::F32) widened.resize(static_cast<std::size_t>(kGroup * in));
    for (std::int64_t o = first; o < first + width; o += kGroup) {
      const auto group = static_cast<int>(std::min<std::int64_t>(kGroup, first + width - o));
      const char* stored = static_cast<const char*>(w) + o * row_bytes;
      const float* group_rows = reinterpret_cast<const float*>(stored);
      if (weights != DType::F32) {
        rows_to_f32(stored, weights, group * in, widened.data());
        group_rows = widened.data();
      }
      // The next group's rows in this thread's block (none after its last group).
      const auto next_rows =
          static_cast<int>(std::clamp<std::int64_t>(first + width - o - kGroup, 0, kGroup));
      const char* next = next_rows > 0 ? stored + kGroup * row_bytes : stored;
      for (const Tile& tile : tiles) {
        const std::int64_t first_row = tile.first_vector * 8;
        group_against_tile(lanes + first_row * in, tile.vectors, group_rows, in, group, next,
                           next_rows, row_bytes, dots);
        for (std::int64_t i = 0; i < std::min<std::int64_t>(8 * tile.vectors, rows - first_row);
             ++i) {
          for (int j = 0; j < group; ++j) {
            store_output(y[(first_row + i) * outputs + o + j], dots[j][i], b, o + j, accumulate);
          }
        }
      }
    }
  });
}

#else

void decode_lanes_avx2(const Context&, const float*, const void*, DType, const float*, float*,
                       std::int64_t, std::int64_t, std::int64_t, bool) {
  check(false, "decode_lanes_avx2", "AVX2 exists on x86-64 CPUs only");
}

#endif  // __x86_64__

}  // namespace attnscope::ops::cpu
