// Choosing the next token of each row of logits on the GPU, without copying the logits to the
// host: only the chosen ids [B] (4 bytes a row) ever need to cross.
//
// The rule is the CPU Sampler's (runtime/sampler.h), in the same order:
//   greedy (temperature 0): the arg max, lowest id on ties;
//   otherwise p_i = exp((logit_i - max) / T); keep the top-k (k = 0: all; ties broken towards
//   the lower id), then the smallest most-probable prefix of those whose mass reaches
//   top_p * (their mass); renormalise and draw.
// The draw uses a counter-based generator: the uniform number of row r at step s is a hash
// (splitmix64) of (options.seed, s, r), so a seed reproduces a run and rows never share numbers.
// The GPU walks the kept tokens in id order (the CPU walks them most probable first), so one
// seed picks different tokens on the two devices, from the same distribution.
//
// Shapes: logits [B, V] f32 on a cuda device, out_ids [B] i32 on the same device. Logits are
// expected finite; a NaN logit is treated as -inf, and a row whose probabilities all vanish (no
// finite logit) gives its arg max (or 0). Tokens less probable than 2^-38 times the most probable
// one are never drawn (fixed-point sums, ops/cuda/sample.cu). The ops run on cuda only: on the
// cpu the model uses Sampler.
// Cost (one block per row, one launch; ops/cuda/sample.cu): greedy reads the row once; sampling
// reads it once, writes p_i (V floats of temporary per row) and re-reads them ~32 times for
// top-k, ~32 for top-p and 3 or 4 times to draw, from L2.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/sampler.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

// Draws one token per row: out_ids[b] for logits[b, :] at decode step `step`.
void sample_tokens(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                   std::uint64_t step, Tensor& out_ids);

// The distribution sample_tokens draws from: probs[b, i] = the kept, renormalised probability of
// token i (0 for tokens dropped by top-k / top-p; one-hot at the arg max when greedy). For tests
// and for inspecting a sampler setting; probs is [B, V] f32 on the logits' device.
void sampling_probabilities(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                            Tensor& probs);

// The kernels behind both (ops/cuda/sample.cu), called after the checks above. `out_ids` or
// `probs` may be undefined: the kernel writes what is given.
namespace cuda {
void sample(Context& ctx, const Tensor& logits, const SamplingOptions& options, std::uint64_t step,
            Tensor* out_ids, Tensor* probs);
}

}  // namespace attnscope::ops
