// ops::sample_tokens: checks, then the cpu Sampler loop or the cuda kernel (ops/dispatch.h
// explains the pattern); ops::sampling_probabilities: checks, then the cuda kernel.
#include "ops/sample.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

namespace {

// The device of logits and `out`, after the checks both ops share.
Device check_logits(const char* op, const Tensor& logits, const Tensor& out,
                    const SamplingOptions& options) {
  const Device device = common_device(op, {{logits, "logits"}, {out, "out"}});
  require_dtype(logits, DType::F32, op, "logits");
  check(logits.rank() == 2, op, "logits must be [batch, vocab]");
  // Counts of tokens are exact in the kernel's f32 block sums up to 2^24.
  check(logits.dim(1) >= 1 && logits.dim(1) < (std::int64_t{1} << 24), op,
        "the vocabulary must hold 1 to 2^24 - 1 tokens");
  validate_sampling(options);
  return device;
}

}  // namespace

void sample_tokens(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                   std::uint64_t step, Tensor& out_ids) {
  profiler::Scope scope(ctx, "sample_tokens");
  const Device device = check_logits("sample_tokens", logits, out_ids, options);
  require_dtype(out_ids, DType::I32, "sample_tokens", "out_ids");
  require_shape(out_ids, {logits.dim(0)}, "sample_tokens", "out_ids");
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::sample(ctx, logits, options, step, &out_ids, nullptr);
    return;
  }
  cpu::sample_tokens(ctx, logits, options, step, out_ids);
}

void sampling_probabilities(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                            Tensor& probs) {
  profiler::Scope scope(ctx, "sampling_probabilities");
  const Device device = check_logits("sampling_probabilities", logits, probs, options);
  check(device == Device::CUDA, "sampling_probabilities", "runs on a cuda device only");
  require_dtype(probs, DType::F32, "sampling_probabilities", "probs");
  require_shape(probs, logits.shape(), "sampling_probabilities", "probs");
  if constexpr (kCudaBuild) cuda::sample(ctx, logits, options, 0, nullptr, &probs);
}

}  // namespace attnscope::ops
