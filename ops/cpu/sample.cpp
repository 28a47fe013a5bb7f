// ops::sample_tokens on the cpu (arguments checked by ops/sample.cpp): the Sampler of
// runtime/sampler.h, row by row, each row starting at its own number of the seed's stream.
#include "ops/sample.h"

namespace attnscope::ops::cpu {

void sample_tokens(Context&, const Tensor& logits, const SamplingOptions& options,
                   std::uint64_t step, Tensor& out_ids) {
  const std::int64_t batch = logits.dim(0);
  const auto vocab = static_cast<std::size_t>(logits.dim(1));
  const float* rows = logits.data<float>();
  std::int32_t* ids = out_ids.data<std::int32_t>();
  for (std::int64_t r = 0; r < batch; ++r) {
    Sampler sampler(options,
                    step * static_cast<std::uint64_t>(batch) + static_cast<std::uint64_t>(r));
    ids[r] =
        sampler.sample(std::span<const float>(rows + static_cast<std::size_t>(r) * vocab, vocab));
  }
}

}  // namespace attnscope::ops::cpu
