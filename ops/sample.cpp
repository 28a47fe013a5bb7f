// ops::sample_tokens and ops::sampling_probabilities: checks, then the cuda kernel
// (ops/cuda/sample.cu). There is no cpu path: on the cpu the model uses Sampler.
#include "ops/sample.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

namespace {

void check_logits(const char* op, const Tensor& logits, const Tensor& out,
                  const SamplingOptions& options) {
  const Device device = common_device(op, {{logits, "logits"}, {out, "out"}});
  check(device == Device::CUDA, op,
        "runs on a cuda device (on the cpu, sample with Sampler from runtime/sampler.h)");
  require_dtype(logits, DType::F32, op, "logits");
  check(logits.rank() == 2, op, "logits must be [batch, vocab]");
  // Counts of tokens are exact in the kernel's f32 block sums up to 2^24.
  check(logits.dim(1) >= 1 && logits.dim(1) < (std::int64_t{1} << 24), op,
        "the vocabulary must hold 1 to 2^24 - 1 tokens");
  validate_sampling(options);
}

}  // namespace

void sample_tokens(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                   std::uint64_t step, Tensor& out_ids) {
  profiler::Scope scope(ctx, "sample_tokens");
  check_logits("sample_tokens", logits, out_ids, options);
  require_dtype(out_ids, DType::I32, "sample_tokens", "out_ids");
  require_shape(out_ids, {logits.dim(0)}, "sample_tokens", "out_ids");
  if constexpr (kCudaBuild) cuda::sample(ctx, logits, options, step, &out_ids, nullptr);
}

void sampling_probabilities(Context& ctx, const Tensor& logits, const SamplingOptions& options,
                            Tensor& probs) {
  profiler::Scope scope(ctx, "sampling_probabilities");
  check_logits("sampling_probabilities", logits, probs, options);
  require_dtype(probs, DType::F32, "sampling_probabilities", "probs");
  require_shape(probs, logits.shape(), "sampling_probabilities", "probs");
  if constexpr (kCudaBuild) cuda::sample(ctx, logits, options, 0, nullptr, &probs);
}

}  // namespace attnscope::ops
