// Prefill with weights stored in fewer than 32 bits (bf16/f16 in linear_16bit.cpp below the
// avx512 levels, q8_0 in linear_q8_0.cpp): each thread widens its whole block of weight rows to f32
// once per call and runs one f32 GEMM (ops/cpu/gemm.h) over it, exactly as ops/cpu/linear.cpp does
// with f32 weights.
//
// Why whole blocks and not cache-sized panels: the GEMM packs the input x [N, K] again for every
// call, so a thread that walks its block in P panels packs x P times. With 1 MiB
// panels (85 rows at K = 3072) the 16-bit path was ~8% slower than f32 at pp512, q8_0's 512-row
// panels 2-5%. One panel per thread packs x once, like f32; widening then costs M K reads of the
// stored weights and 4 M K bytes written, against the GEMM's 2 N M K FLOPs: at N = 512 the
// widening is ~1% of the time. Measured (synthetic:gpt2 pp512, 2 threads, 4 interleaved rounds,
// medians of tokens/s, Xeon 2.0 GHz with load 6-7 on 2 cores): f32 83, bf16 in 1 MiB panels 64,
// bf16 whole blocks 78, f16 whole blocks 80. In docs/results/2026-12-01-cpu-prefill's rerun
// (interleaved rounds, load 10, per-round ratios' medians) bf16 is 0.96x and f16 1.11x f32:
// within that machine's noise of parity, where the panels were clearly slower.
//
// Memory: one f32 buffer per thread and weight format, kept between calls (allocating megabytes
// per call would fault its pages in every time), of at most kMaxBlockBytes. GPT-2 small at 2
// threads needs 4.7 MB per thread (the MLP's 3072 x 768 split in two; 9.4 MB at one thread); a
// larger block (the LM head over all positions, 50257 rows) is walked in panels of
// kMaxBlockBytes, each still thousands of rows wide, so the repeated packing of x stays small.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/cpu/gemm.h"
#include "ops/cpu/output_blocks.h"

namespace attnscope::ops::cpu {

constexpr std::int64_t kMaxBlockBytes = std::int64_t{16} << 20;

// y (=|+=) x W^T + b for x [rows, in] f32 and W [outputs, in] in a narrow format:
// `widen_rows(first, count, dst)` writes weight rows [first, first + count) as f32 to dst
// (count x in floats, row-major). Must not throw (it runs inside an OpenMP region).
template <typename WidenRows>
void gemm_widened_weights(const Context& ctx, const float* x, const float* b, float* y,
                          std::int64_t rows, std::int64_t in, std::int64_t outputs, bool accumulate,
                          WidenRows widen_rows) {
  const std::int64_t max_panel_rows =
      std::max<std::int64_t>(1, kMaxBlockBytes / (in * static_cast<std::int64_t>(sizeof(float))));
  const CpuLevel level = cpu_level();
  for_each_output_block(ctx, outputs, [&](std::int64_t first, std::int64_t width) {
    thread_local std::vector<float> panel;
    const std::int64_t panel_rows = std::min(max_panel_rows, width);
    // Grown, never shrunk: resizing down and up again between matrices would zero-fill the
    // regrown part on every call.
    const auto needed = static_cast<std::size_t>(panel_rows * in);
    if (panel.size() < needed) panel.resize(needed);
    for (std::int64_t p = first; p < first + width; p += panel_rows) {
      const std::int64_t count = std::min(panel_rows, first + width - p);
      widen_rows(p, count, panel.data());
      gemm_output_columns(level, x, panel.data(), b, y, rows, in, outputs, p, count, accumulate);
    }
  });
}

}  // namespace attnscope::ops::cpu
