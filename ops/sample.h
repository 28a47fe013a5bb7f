// Choosing the next token of each row of logits, on the device the logits live on: on a GPU
// only the chosen ids [B] (4 bytes a row) ever need to cross to the host.
//
// The rule is the CPU Sampler's (runtime/sampler.h), in the same order:
//   greedy (temperature 0): the arg max, lowest id on ties;
//   otherwise p_i = exp((logit_i - max) / T); keep the top-k (k = 0: all; ties broken towards
//   the lower id), then the smallest most-probable prefix of those whose mass reaches
//   top_p * (their mass); renormalise and draw.
// On the cpu, row r at step s is drawn by a Sampler with number s B + r of the seed's stream
// (ops/cpu/sample.cpp): a batch-1 run draws exactly what one Sampler drawing step by step does.
// On a GPU the draw uses a counter-based generator: the uniform number of row r at step s is a
// hash (splitmix64) of (options.seed, s, r), so a seed reproduces a run and rows never share
// numbers. Both devices walk the kept tokens in id order, but from different numbers, so one seed
// picks different tokens on the two devices, from the same distribution.
//
// Shapes: logits [B, V] f32, out_ids [B] i32 on the same device. On the cpu a NaN logit is an
// error (as in Sampler). On a GPU logits are expected finite; a NaN logit is treated as -inf, and
// a row whose probabilities all vanish (no finite logit) gives its arg max (or 0). Tokens less
// probable than 2^-38 times the most probable one are never drawn on a GPU (fixed-point sums,
// ops/cuda/sample.cu).
// Cost on the cpu: Sampler's per row. On a GPU (one block per row, one launch;
// ops/cuda/sample.cu): greedy reads the row once; sampling reads it once, writes p_i (V floats
// of temporary per row) and re-reads them ~32 times for top-k, ~32 for top-p and 3 or 4 times
// to draw, from L2.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/sampler.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

// Draws one token per row: out_ids[b] for logits[b, :] at decode step `step`.
void sample_tokens(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                   std::uint64_t step, Tensor& out_ids);

// The distribution sample_tokens draws from on a GPU: probs[b, i] = the kept, renormalised
// probability of token i (0 for tokens dropped by top-k / top-p; one-hot at the arg max when
// greedy). For tests of the kernel and for inspecting a sampler setting; cuda only; probs is
// [B, V] f32 on the logits' device.
void sampling_probabilities(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                            Tensor& probs);

// The implementations behind them, called after the checks above: the cpu's Sampler loop
// (ops/cpu/sample.cpp), and the cuda kernel (ops/cuda/sample.cu), which writes whichever of
// `out_ids` and `probs` is given.
namespace cpu {
void sample_tokens(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                   std::uint64_t step, Tensor& out_ids);
}
namespace cuda {
void sample(Context& ctx, const Tensor& logits, const SamplingOptions& options, std::uint64_t step,
            Tensor* out_ids, Tensor* probs);
}

}  // namespace attnscope::ops
