// Read bandwidth: how fast this machine's cores can stream a buffer out of memory, the roof a
// decode step (which reads every weight once) is measured against (`bench --op membw`).
//
// A single vectorised sum per thread under-reports it: on a small core count the memory
// system wants more loads in flight than one dependent accumulator chain and the hardware
// prefetcher's one stream give, and attnscope's own decode read its f32 weights at up to 112%
// of that number (issue 29). So the probe reads the same buffer several ways, every thread its
// own contiguous share, and the fastest is the roof:
//   simd-sum        one `omp simd` reduction (what membw measured before): the floor.
//   accumulators    8 independent vector accumulators, 256 bytes per iteration.
//   streams         4 streams per thread (the quarters of its share side by side), 2
//                   accumulators each: more DRAM pages and prefetcher streams open at once.
//   prefetch        accumulators plus the decode kernels' software prefetch: into L2,
//                   kWeightPrefetchBytes ahead (ops/cpu/output_blocks.h).
// Measured on a 2-core Zen 3 (bench --op membw): simd-sum 24-27 GB/s, accumulators 27-29,
// streams 31-33 (8 streams no better), prefetch 24-27 at 512 or 2048 bytes ahead (then a
// non-temporal prefetch). On a 2-core Xeon with AVX-512 (3 runs): simd-sum 21-23, accumulators
// 22-23, streams 28-29, prefetch 24-26 (18-19 non-temporal 512 bytes ahead); streams with the
// prefetch as well were no faster than streams (28-29).
// The buffer is advised for huge pages, as a cpu model's weights are (runtime/tensor.h
// empty_on_huge_pages): on the Xeon above, on 4 KiB pages, simd-sum read 22-23 GB/s and streams
// 29-30; on huge pages 32 and 31-33 (docs/results/2026-12-03-decode-huge-pages).
// Cost: warmup + repetitions passes over `bytes` per variant, each ~bytes / bandwidth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/context.h"

namespace attnscope::cli {

struct ReadVariant {
  std::string name;
  std::vector<double> gb_per_s;  // one per timed pass
  double median_gb_per_s = 0;
  float checksum = 0;  // the sums, so no pass can be optimised away
};

struct ReadBandwidth {
  std::vector<ReadVariant> variants;  // in the order above
  std::size_t best = 0;               // the variant with the highest median
  double gb_per_s() const { return variants[best].median_gb_per_s; }
};

// Reads a buffer of `bytes` (rounded down to whole 256-byte blocks, at least one per thread)
// with ctx's threads, each variant `warmup` untimed then `repetitions` timed passes. CPU only.
ReadBandwidth measure_read_bandwidth(const Context& ctx, std::int64_t bytes, int warmup,
                                     int repetitions);

}  // namespace attnscope::cli
