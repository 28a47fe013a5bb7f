#include "tools/attnscope/measure/read_bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "ops/cpu/output_blocks.h"
#include "runtime/allocator.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/elapsed.h"
#include "tools/attnscope/report/statistics.h"

namespace attnscope::cli {

namespace {

// Eight floats: one AVX register where the build targets AVX, two SSE ones otherwise.
using Lanes = float __attribute__((vector_size(32)));
constexpr std::int64_t kLanes = 8;
constexpr std::int64_t kBlock = 8 * kLanes;  // floats per iteration: 8 vectors, 256 bytes
// The decode kernels' prefetch distance and hint (ops/cpu/output_blocks.h): 8 KB ahead, into L2.
constexpr std::int64_t kPrefetchBytes = ops::cpu::kWeightPrefetchBytes;
constexpr std::int64_t kCacheLine = 64;

Lanes load(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float sum_lanes(const Lanes* accumulators, int count) {
  float total = 0;
  for (int a = 0; a < count; ++a) {
    for (int lane = 0; lane < kLanes; ++lane) total += accumulators[a][lane];
  }
  return total;
}

float simd_sum(const float* data, std::int64_t count) {
  float total = 0;
#pragma omp simd reduction(+ : total)
  for (std::int64_t i = 0; i < count; ++i) total += data[i];
  return total;
}

// count is a whole number of blocks in every variant below.
template <bool kPrefetch>
float accumulators_sum(const float* data, std::int64_t count) {
  Lanes sums[8] = {};
  for (std::int64_t i = 0; i < count; i += kBlock) {
    if constexpr (kPrefetch) {
      const char* ahead = reinterpret_cast<const char*>(data + i) + kPrefetchBytes;
      for (std::int64_t line = 0; line < kBlock * 4; line += kCacheLine) {
        ops::cpu::prefetch_weights(ahead + line);
      }
    }
    for (int a = 0; a < 8; ++a) sums[a] += load(data + i + a * kLanes);
  }
  return sum_lanes(sums, 8);
}

float streams_sum(const float* data, std::int64_t count) {
  constexpr int kStreams = 4;
  const std::int64_t stream_floats = count / kStreams / (2 * kLanes) * (2 * kLanes);
  Lanes sums[2 * kStreams] = {};
  for (std::int64_t i = 0; i < stream_floats; i += 2 * kLanes) {
    for (int s = 0; s < kStreams; ++s) {
      const float* at = data + s * stream_floats + i;
      sums[2 * s] += load(at);
      sums[2 * s + 1] += load(at + kLanes);
    }
  }
  return sum_lanes(sums, 2 * kStreams) +
         simd_sum(data + kStreams * stream_floats, count - kStreams * stream_floats);
}

using ChunkSum = float (*)(const float*, std::int64_t);

struct Kernel {
  const char* name;
  ChunkSum sum;
};

constexpr Kernel kKernels[] = {{"simd-sum", simd_sum},
                               {"accumulators", accumulators_sum<false>},
                               {"streams", streams_sum},
                               {"prefetch", accumulators_sum<true>}};

}  // namespace

ReadBandwidth measure_read_bandwidth(const Context& ctx, std::int64_t bytes, int warmup,
                                     int repetitions) {
  check(ctx.device() == Device::CPU, "--device", "the read-bandwidth probe measures host memory");
  check(repetitions >= 1, "-r", "the read-bandwidth probe needs at least one repetition");
  const int threads = ctx.threads();
  // Every thread's share is a whole number of blocks (the prefetch reads past a share's end,
  // into the next one's or kPrefetchBytes of padding, never past the allocation).
  const std::int64_t blocks_per_thread = std::max<std::int64_t>(
      1, bytes / static_cast<std::int64_t>(sizeof(float)) / kBlock / threads);
  const std::int64_t share = blocks_per_thread * kBlock;
  const std::int64_t count = share * threads;
  const std::int64_t padding = kPrefetchBytes / static_cast<std::int64_t>(sizeof(float)) + kBlock;
  const std::unique_ptr<float[]> buffer(new float[static_cast<std::size_t>(count + padding)]);
  float* data = buffer.get();
  // On huge pages where the kernel grants them, as the cpu model's weights are (place_weights in
  // models/checkpoint.h): the roof and what is measured against it pay the same TLB costs.
  advise_huge_pages(data, static_cast<std::size_t>(count + padding) * sizeof(float));
  // Each thread first touches the pages it will read, so they sit on its memory node.
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t begin = omp_get_thread_num() * share;
    for (std::int64_t i = begin; i < begin + share; ++i) data[i] = static_cast<float>(i % 7);
  }
  std::fill(data + count, data + count + padding, 0.0f);

  ReadBandwidth result;
  for (const Kernel& kernel : kKernels) {
    ReadVariant variant{kernel.name, {}, 0, 0};
    for (int pass = 0; pass < warmup + repetitions; ++pass) {
      std::vector<float> partial(static_cast<std::size_t>(threads));
      const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
      {
        const int thread = omp_get_thread_num();
        partial[static_cast<std::size_t>(thread)] = kernel.sum(data + thread * share, share);
      }
      const double seconds = seconds_since(start);
      for (float p : partial) variant.checksum += p;
      if (pass >= warmup) {
        variant.gb_per_s.push_back(static_cast<double>(count) * sizeof(float) / seconds / 1e9);
      }
    }
    variant.median_gb_per_s = median(variant.gb_per_s);
    result.variants.push_back(std::move(variant));
  }
  for (std::size_t v = 1; v < result.variants.size(); ++v) {
    if (result.variants[v].median_gb_per_s > result.variants[result.best].median_gb_per_s) {
      result.best = v;
    }
  }
  return result;
}

}  // namespace attnscope::cli
