// A linear layer with q8_0 weights on the cpu: y[r, o] = sum_k x[r, k] W[o, k] + b[o], or with
// `accumulate` y[r, o] += that. W [outputs, in] is stored as q8_0 blocks (runtime/q8_0.h), in/32
// per row; x [rows, in], b [outputs] (or null) and y [rows, outputs] are f32.
//
// Decode (rows < gemm_min_rows(level, Q8_0), ops/cpu/output_blocks.h: 16 to 128 rows by level,
// so a batch's decode step too), as llama.cpp computes it: each input row is quantized to 8 bits as
// well, in blocks of 32 with an f32 scale (quantize_activations_q8_0), and every output is
//   sum over blocks of (dw dx) * sum_i qw[i] qx[i],
// the inner sum an exact integer (|sum| <= 32 * 127^2 < 2^24, exact as a float too), the scaling
// and the sum over blocks in f32. The bytes multiply with vpmaddubsw, which takes one unsigned and
// one signed operand: |qw| times qx with qw's sign moved onto qx, products of pairs summed to
// int16 (at most 2 * 127 * 127 = 32258: no saturation, since q is never -128), then vpmaddwd
// against ones sums pairs of those to int32 (with AVX-512 VNNI, one vpdpbusd does both). Four
// kernels, chosen at run time by cpu_level() (runtime/cpu_features.h): avx512vnni (also at
// avx512bf16 and amx) and avx512 (AVX-512 BW, two blocks per instruction, four per step), avx2 (one
// block; groups of four input rows summed side by side), portable (plain loops). All quantize x
// identically and differ only in the order of the f32 sum over blocks (avx512vnni and avx512 not
// even in that). Cost: reads 34 bytes per 32 weights once (3.8x fewer than f32), for all rows
// together: each thread streams its block of weight rows once, each row applied to every input row
// while in L1; quantizing x costs rows x in, nothing beside the outputs x in weights. At avx512vnni
// and avx512bf16, a step of 6 rows or more puts the input rows in the vector lanes instead
// (q8_0_decode_in_lanes below, ops/cpu/decode_q8_0_vnni.cpp): the same integer sums, 16 rows per
// instruction. At the avx2 level a step of 16 rows or more puts them in the lanes too
// (ops/cpu/decode_lanes_avx2.h), but with the weights dequantized to f32 and x kept in f32, as that
// level's prefill does (q8_0_quantizes_x below).
//
// Prefill (from that many rows on), by level:
//  - avx512vnni and avx512bf16: x quantized as in decode, then a blocked GEMM of bytes against
//  bytes on
//    vpdpbusd (ops/cpu/gemm_q8_0_vnni.cpp): 64 byte products per instruction, the weights packed
//    into panels of 32 outputs once per call.
//  - amx: on AMX's bf16 tiles, x in f32 split into two bf16 parts (ops/cpu/gemm_amx.cpp).
//  - below: each thread dequantizes its weight rows to f32 and hands them to the f32 GEMM
//    (ops/cpu/widened_gemm.h): FLOP-bound like the f32 path; dequantizing adds in * outputs
//    conversions, 1/rows of the GEMM's multiply-adds.
//
// Error (derived in tests/test_q8_0.cpp): |x - dx qx| <= dx/2 + |x| gamma(3) for the
// activations (u = 2^-24, gamma(n) = n u / (1 - n u)), |w - dw qw| <= dw/2 for the weights
// (runtime/q8_0.h); the f32 arithmetic adds at most gamma(K/32 + 10) times the sum of the
// |products| of the quantized operands plus |b| and |y| (gamma(K + 10) where x stays f32).
// Prefill below avx512vnni and at amx keeps x in f32 (at amx split into two bf16 parts): only
// the weights' error remains. A prompt shorter than the threshold is multiplied as decode is.
#pragma once

#include <cstdint>

#include "ops/cpu/decode_lanes_avx2.h"
#include "ops/cpu/output_blocks.h"
#include "runtime/context.h"
#include "runtime/cpu_features.h"
#include "runtime/q8_0.h"

namespace attnscope::ops::cpu {

// Whether prefill (gemm_min_rows rows or more) at `level` quantizes x as decode does (the byte
// GEMM of the avx512vnni and avx512bf16 levels) rather than keeping it in f32 (the other levels).
inline bool q8_0_prefill_quantizes_x(CpuLevel level) {
  return level >= CpuLevel::Avx512Vnni && level < CpuLevel::Amx;
}

// Whether linear_q8_0 quantizes x for `rows` rows at `level`: the decode kernels do, but for the
// avx2 level's lanes (decode_in_lanes_avx2); prefill does where q8_0_prefill_quantizes_x says so.
inline bool q8_0_quantizes_x(CpuLevel level, std::int64_t rows) {
  if (rows >= gemm_min_rows(level, DType::Q8_0)) return q8_0_prefill_quantizes_x(level);
  return !decode_in_lanes_avx2(level, DType::Q8_0, rows);
}

// Whether a decode step of `rows` rows (below gemm_min_rows) at `level` runs with the input rows
// in the vector lanes (ops/cpu/decode_q8_0_vnni.cpp) rather than one weight row at a time against
// up to 8 input rows (linear_q8_0.cpp). A tile of 16 lanes costs the same however many rows it
// holds. Measured (Zen 4, 2 threads, synthetic:gpt2, decode tokens/s of a batch, 3 interleaved
// rounds): lanes / one row at a time 0.80x at 6 rows, 1.00x at 8, 1.20x at 10, 1.6x at 16
// (docs/results/2026-12-04-q8-decode-lanes/); since the lanes kernel asks for the next group's
// weights ahead, 0.85x (0.81-0.94) at 4 rows, 1.09x (0.91-1.31) at 5, 1.17x (1.07-1.21) at 6,
// 1.54x at 8 (docs/results/2026-12-05-q8-lanes-prefetch/). Only at avx512vnni and avx512bf16
// (the Zen 4's level): at amx (Intel cores, where the kernel's xor may take vpdpbusd's ports) it
// is not measured.
inline bool q8_0_decode_in_lanes(CpuLevel level, std::int64_t rows) {
  return level >= CpuLevel::Avx512Vnni && level < CpuLevel::Amx && rows >= 6;
}

// Throws Error when `in` is not a multiple of 32.
void linear_q8_0(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b, float* y,
                 std::int64_t rows, std::int64_t in, std::int64_t outputs, bool accumulate);

// The activation side of the decode product: n values (a multiple of 32, unchecked) into n bytes
// `q` and n / 32 scales: dx = max|x| / 127, q = round(x * (127 / max|x|)), both in f32. A block
// holding an infinity or a NaN gets scale NaN (its products become NaN); a block whose max|x|
// is 0 or too small for 127 / max|x| to be finite (below ~3.7e-37) is zeros with scale 0. At the
// avx512 levels 16 lanes at a time, with the same bytes and scales.
void quantize_activations_q8_0(const float* x, std::int8_t* q, float* scales, std::int64_t n);

// x [rows, in] quantized row by row (quantize_activations_q8_0) into buffers of the calling
// thread, kept between calls (no allocation per call; valid until its next call), shared by
// the kernels' threads: bytes [rows, in], scales [rows, in / 32]. With `offset_by_128`, every
// byte is qx + 128 as an unsigned byte (in two's complement, qx with its top bit flipped):
// vpdpbusd's unsigned operand (ops/cpu/gemm_q8_0_vnni.cpp). A large x is quantized by the
// context's threads together.
struct QuantizedRows {
  const std::int8_t* bytes;
  const float* scales;
};
QuantizedRows quantize_rows(const Context& ctx, const float* x, std::int64_t rows, std::int64_t in,
                            bool offset_by_128);

}  // namespace attnscope::ops::cpu
