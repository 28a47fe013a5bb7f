// Sampling the next token on a GPU (ops/sample.h has the rule): one block of 1024 threads per
// row of logits [B, V], one launch for the whole batch, no host round trip.
//
// 1. Arg max (greedy's answer, and the max every probability is taken against): a block
//    reduction over (value, id) pairs, larger value first, lower id on ties.
// 2. p_i = exp((l_i - max) / T), in [0, 1], written once to a temporary row [V] (L2-resident);
//    every later pass re-reads it.
// 3. Top-k without sorting: the k-th largest p is the largest threshold t with
//    count(p >= t) >= k. Non-negative floats order like their bit patterns, so bisection on the
//    32-bit pattern finds t exactly in ~30 steps, each a pass over the row and a block sum.
//    Kept: every p > t, plus the first (k - count(p > t)) tokens with p == t in id order,
//    which is where the cpu's sort (by p, then id) puts them.
// 4. Top-p the same way: the largest t whose kept mass sum(p >= t) reaches top_p * (top-k mass),
//    then the fewest ties at t that reach it. Masses are summed in f64, as the cpu does, so the
//    two agree on the boundary unless a partial sum lands within ~1e-12 of the target.
// 5. Draw: each thread owns a contiguous chunk of ids; kept p become integers p * 2^38, so block
//    prefix sums are exact and identical in every thread. A 64-bit hash of (seed, step, row)
//    scaled to [0, total) picks the token whose cumulative interval contains it, walking ids in
//    increasing order, as the cpu does (from numbers of its own: same distribution, different
//    token for one seed).
// Every branch and loop that contains a barrier depends only on block-wide reduction results,
// which are bit-identical in every thread, so the whole block always takes it together.
// Cost per row: greedy reads V floats once. Sampling reads V logits once, writes V floats of
// p, then re-reads them ~32 times for top-k, ~32 for top-p and 3 or 4 times to draw (from L2:
// of the order of 2 us per pass per block at V = 50257), with 2 block barriers per pass. A
// radix select (4 passes of 8 bits with shared-memory histograms) would cut the ~64 bisection
// passes to 8.
#include <climits>
#include <cstdint>

#include "ops/cuda/device_math.cuh"
#include "ops/sample.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
// Kept probabilities (at most 1) become integers p * 2^38 for the draw; a row of V < 2^24
// tokens then sums to less than 2^62, and integer sums are exact in any order. Tokens with
// p < 2^-38 (relative to the most probable one) can no longer be drawn.
constexpr float kFixedPointOne = 274877906944.0f;  // 2^38

struct SampleArgs {
  const float* logits;  // [B, V]
  float* p;             // [B, V] temporary; unused when greedy
  std::int64_t vocab;
  float temperature;
  std::int64_t top_k;
  float top_p;
  std::uint64_t seed;
  std::uint64_t step;
  std::int32_t* out_ids;  // [B], or nullptr
  float* probs;           // [B, V], or nullptr
};

// The tokens kept so far: every p > threshold, plus the first `ties` tokens (lowest ids) with
// p == threshold. `mass` is their summed p.
struct KeptSet {
  float threshold;
  std::int64_t ties;
  double mass;
};

struct Candidate {
  float value;
  int index;
};

__device__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// 64 random bits for one (seed, step, row): a counter-based generator, no state to carry.
__device__ std::uint64_t random_bits(std::uint64_t seed, std::uint64_t step, std::uint64_t row) {
  return splitmix64(splitmix64(splitmix64(seed) ^ step) ^ row);
}

// Larger value first, lower id on ties; NaN is never better than anything.
__device__ bool better(float value, int index, float best_value, int best_index) {
  return value > best_value || (value == best_value && index < best_index);
}

__device__ void keep_better(Candidate& best, float value, int index) {
  if (better(value, index, best.value, best.index)) best = {value, index};
}

// The arg max of row[0, n) over the block; every thread gets it. index is INT_MAX when every
// entry is NaN. `values` and `indices` are 32 entries of shared memory each.
__device__ Candidate block_argmax(const float* row, std::int64_t n, float* values, int* indices) {
  Candidate best{-INFINITY, INT_MAX};
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    keep_better(best, row[i], static_cast<int>(i));
  }
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    keep_better(best, __shfl_xor_sync(0xffffffffu, best.value, offset),
                __shfl_xor_sync(0xffffffffu, best.index, offset));
  }
  __syncthreads();  // values/indices may still be read by an earlier call
  if (lane == 0) {
    values[warp] = best.value;
    indices[warp] = best.index;
  }
  __syncthreads();
  best = lane < kWarps ? Candidate{values[lane], indices[lane]} : Candidate{-INFINITY, INT_MAX};
  for (int offset = 16; offset > 0; offset /= 2) {
    keep_better(best, __shfl_xor_sync(0xffffffffu, best.value, offset),
                __shfl_xor_sync(0xffffffffu, best.index, offset));
  }
  return best;
}

// How many of p[0, n) satisfy keep(p_i), over the block (exact below 2^24).
template <typename Keep>
__device__ float block_count(const float* p, std::int64_t n, Keep keep, float* scratch) {
  float count = 0.0f;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) count += keep(p[i]) ? 1.0f : 0.0f;
  return block_sum(count, scratch);
}

// Sum over the block in f64 (block_sum of device_math.cuh, for doubles); every thread gets the
// result. `scratch` is 32 doubles of shared memory.
__device__ double block_sum_f64(double x, double* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  __syncthreads();  // scratch may still be read by an earlier reduction
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = lane < kWarps ? scratch[lane] : 0.0;
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// The sum of the p_i that satisfy keep(p_i), over the block, in f64. The summation order is
// fixed and p_i >= 0, so keeping more tokens never gives a smaller sum.
template <typename Keep>
__device__ double block_mass(const float* p, std::int64_t n, Keep keep, double* scratch) {
  double mass = 0.0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (keep(p[i])) mass += p[i];
  }
  return block_sum_f64(mass, scratch);
}

// The largest float t in [lowest, 1] with holds(t), given holds(lowest) and !holds(t) for every
// t > 1, by bisection on the bit patterns. holds() must be non-increasing in t and return a
// block-wide result, so every thread takes the same ~30 steps.
template <typename Holds>
__device__ float largest_threshold(float lowest, Holds holds) {
  unsigned int lo = __float_as_uint(lowest);
  unsigned int hi = __float_as_uint(1.0f) + 1u;
  while (hi - lo > 1u) {
    const unsigned int mid = lo + (hi - lo) / 2u;
    if (holds(__uint_as_float(mid))) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return __uint_as_float(lo);
}

// Top-k: the k most probable tokens (all of them when k is 0 or at least n).
__device__ KeptSet top_k_set(const float* p, std::int64_t n, std::int64_t k, float* scratch,
                             double* mass_scratch) {
  if (k <= 0 || k >= n) {
    // Every p > 0, and every p == 0 too (no row has more than n of them).
    const auto positive = [](float v) { return v > 0.0f; };
    return {0.0f, n, block_mass(p, n, positive, mass_scratch)};
  }
  const auto wanted = static_cast<float>(k);
  const float threshold = largest_threshold(0.0f, [&](float t) {
    const auto at_least_t = [t](float v) { return v >= t; };
    return block_count(p, n, at_least_t, scratch) >= wanted;
  });
  const auto above_threshold = [threshold](float v) { return v > threshold; };
  const auto above = static_cast<std::int64_t>(block_count(p, n, above_threshold, scratch));
  const std::int64_t ties = k - above;  // >= 1: count(p > threshold) < k by maximality
  const double mass =
      block_mass(p, n, above_threshold, mass_scratch) + static_cast<double>(ties) * threshold;
  return {threshold, ties, mass};
}

// Top-p within `kept`: the smallest most-probable prefix whose mass reaches top_p * kept.mass.
__device__ KeptSet top_p_set(const float* p, std::int64_t n, KeptSet kept, float top_p,
                             float* scratch, double* mass_scratch) {
  const double target = top_p * kept.mass;
  // Above kept.threshold every token is kept, so the kept mass at or above t is a plain sum.
  const float threshold = largest_threshold(kept.threshold, [&](float t) {
    const auto at_least_t = [t](float v) { return v >= t; };
    return block_mass(p, n, at_least_t, mass_scratch) >= target;
  });
  const auto above_threshold = [threshold](float v) { return v > threshold; };
  const auto at_threshold = [threshold](float v) { return v == threshold; };
  const double above = block_mass(p, n, above_threshold, mass_scratch);
  const std::int64_t available =
      threshold == kept.threshold
          ? kept.ties
          : static_cast<std::int64_t>(block_count(p, n, at_threshold, scratch));
  // The fewest tokens at the threshold that bring the mass to the target: at least one, at most
  // those there are (the comparison also sends NaN, from a zero threshold, to `available`).
  const double needed = ceil((target - above) / threshold);
  const std::int64_t ties =
      needed < static_cast<double>(available)
          ? (needed < 1.0 ? std::int64_t{1} : static_cast<std::int64_t>(needed))
          : available;
  return {threshold, ties, above + static_cast<double>(ties) * threshold};
}

struct Scan {
  unsigned long long before;  // the sum over the threads before this one
  unsigned long long total;   // the sum over the block
};

// Exclusive prefix sum of one value per thread, in thread order. Integer sums: exact, and the
// total is the same in every thread. `scratch` is 32 entries of shared memory.
__device__ Scan block_exclusive_scan(unsigned long long x, unsigned long long* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  unsigned long long inclusive = x;
  for (int offset = 1; offset < 32; offset *= 2) {
    const unsigned long long before = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += before;
  }
  __syncthreads();  // scratch may still be read by an earlier scan
  if (lane == 31) scratch[warp] = inclusive;
  __syncthreads();
  unsigned long long warp_offset = 0;
  unsigned long long sum = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) warp_offset += scratch[w];
    sum += scratch[w];
  }
  return {warp_offset + inclusive - x, sum};
}

__device__ unsigned long long fixed_point(float probability) {
  return __float2ull_rz(probability * kFixedPointOne);
}

// The greedy outcome: the arg max, and a one-hot distribution.
__device__ void write_greedy(const SampleArgs& args, std::int64_t row, int token) {
  if (args.out_ids != nullptr && threadIdx.x == 0) args.out_ids[row] = token;
  if (args.probs != nullptr) {
    float* probs = args.probs + row * args.vocab;
    for (std::int64_t i = threadIdx.x; i < args.vocab; i += blockDim.x) {
      probs[i] = i == token ? 1.0f : 0.0f;
    }
  }
}

__global__ void __launch_bounds__(kThreads) sample_kernel(SampleArgs args) {
  __shared__ float scratch[32];
  __shared__ double mass_scratch[32];
  __shared__ float argmax_values[32];
  __shared__ int argmax_indices[32];
  __shared__ unsigned long long scan_scratch[32];
  __shared__ int chosen;
  const std::int64_t row = blockIdx.x;
  const std::int64_t n = args.vocab;
  const float* logits = args.logits + row * n;

  // 1. Arg max.
  const Candidate best = block_argmax(logits, n, argmax_values, argmax_indices);
  const int greedy_token = best.index == INT_MAX ? 0 : best.index;
  if (args.temperature == 0.0f) {
    write_greedy(args, row, greedy_token);
    return;
  }

  // 2. Probabilities relative to the max (NaN, from NaN or infinite logits, counts as 0).
  float* p = args.p + row * n;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float value = expf((logits[i] - best.value) / args.temperature);
    p[i] = value >= 0.0f ? value : 0.0f;
  }
  __syncthreads();  // every thread reads every p below

  // 3. and 4. Which tokens stay.
  KeptSet kept = top_k_set(p, n, args.top_k, scratch, mass_scratch);
  if (args.top_p < 1.0f) kept = top_p_set(p, n, kept, args.top_p, scratch, mass_scratch);

  // 5. Fixed-point masses per chunk of ids; ties at the threshold are kept in id order.
  const std::int64_t chunk = (n + kThreads - 1) / kThreads;
  const std::int64_t begin = min(n, static_cast<std::int64_t>(threadIdx.x) * chunk);
  const std::int64_t end = min(n, begin + chunk);
  unsigned long long local_ties = 0;
  for (std::int64_t i = begin; i < end; ++i) local_ties += p[i] == kept.threshold ? 1 : 0;
  const unsigned long long ties_before = block_exclusive_scan(local_ties, scan_scratch).before;
  const auto kept_ties = static_cast<unsigned long long>(kept.ties);
  // Token with probability v, `rank` ties at the threshold before it: kept?
  auto is_kept = [&](float v, unsigned long long rank) {
    return v > kept.threshold || (v == kept.threshold && rank < kept_ties);
  };
  unsigned long long local_mass = 0;
  unsigned long long rank = ties_before;
  for (std::int64_t i = begin; i < end; ++i) {
    if (is_kept(p[i], rank)) local_mass += fixed_point(p[i]);
    if (p[i] == kept.threshold) ++rank;
  }
  const Scan mass = block_exclusive_scan(local_mass, scan_scratch);
  const unsigned long long mass_before = mass.before;
  const unsigned long long total = mass.total;
  if (total == 0) {  // no finite logit: nothing to draw from
    write_greedy(args, row, greedy_token);
    return;
  }

  if (args.out_ids != nullptr) {
    if (threadIdx.x == 0) chosen = greedy_token;
    __syncthreads();
    // Uniform in [0, total): the high 64 bits of a 64 x 64-bit product.
    const unsigned long long draw =
        __umul64hi(random_bits(args.seed, args.step, static_cast<std::uint64_t>(row)), total);
    // The one thread whose cumulative interval [mass_before, mass_before + local_mass) holds
    // the draw walks its chunk to the token.
    if (mass_before <= draw && draw < mass_before + local_mass) {
      unsigned long long running = mass_before;
      rank = ties_before;
      for (std::int64_t i = begin; i < end; ++i) {
        if (is_kept(p[i], rank)) {
          running += fixed_point(p[i]);
          if (draw < running) {
            chosen = static_cast<int>(i);
            break;
          }
        }
        if (p[i] == kept.threshold) ++rank;
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) args.out_ids[row] = chosen;
  }

  if (args.probs != nullptr) {
    float* probs = args.probs + row * n;
    rank = ties_before;
    for (std::int64_t i = begin; i < end; ++i) {
      probs[i] = is_kept(p[i], rank) ? static_cast<float>(static_cast<double>(fixed_point(p[i])) /
                                                          static_cast<double>(total))
                                     : 0.0f;
      if (p[i] == kept.threshold) ++rank;
    }
  }
}

}  // namespace

void sample(Context& ctx, const Tensor& logits, const SamplingOptions& options, std::uint64_t step,
            Tensor* out_ids, Tensor* probs) {
  const std::int64_t batch = logits.dim(0);
  const std::int64_t vocab = logits.dim(1);
  if (batch == 0) return;
  Tensor p;  // the probabilities, for the passes of steps 3 to 5
  if (options.temperature > 0.0f) p = Tensor::empty({batch, vocab}, DType::F32, ctx.allocator());
  const SampleArgs args{logits.data<float>(),
                        p.defined() ? p.data<float>() : nullptr,
                        vocab,
                        options.temperature,
                        options.top_k,
                        options.top_p,
                        options.seed,
                        step,
                        out_ids != nullptr ? out_ids->data<std::int32_t>() : nullptr,
                        probs != nullptr ? probs->data<float>() : nullptr};
  sample_kernel<<<static_cast<unsigned int>(batch), kThreads, 0, gpu::stream_of(ctx)>>>(args);
  gpu::check_launch("sample_kernel");
}

}  // namespace attnscope::ops::cuda
