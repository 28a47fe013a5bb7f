// open_model and the shared part of LanguageModel (models/language_model.h).
#include "models/language_model.h"

#include "models/gpt2/model.h"
#include "models/llama/model.h"
#include "runtime/transfer.h"

namespace attnscope {

std::string LanguageModel::dtype_summary() const {
  const std::string weights(dtype_name(weight_dtype()));
  if (weight_dtype() == activation_dtype()) return weights;
  return weights + " weights, " + std::string(dtype_name(activation_dtype())) + " activations";
}

Tensor rows_for_logits(Context& ctx, const Tensor& hidden, std::int64_t batch, std::int64_t length,
                       bool all_positions) {
  if (all_positions || length == 1) return hidden;
  Tensor last = Tensor::empty({batch, hidden.dim(1)}, hidden.dtype(), ctx.allocator());
  for (std::int64_t b = 0; b < batch; ++b) {
    Tensor row = last.slice_rows(b, b + 1);
    copy_into(ctx, hidden.slice_rows((b + 1) * length - 1, (b + 1) * length), row);
  }
  return last;
}

std::unique_ptr<LanguageModel> open_model(const std::string& spec, Context& ctx,
                                          std::uint64_t synthetic_seed, DType dtype) {
  if (llama::is_llama(spec)) {
    return std::make_unique<llama::Model>(llama::Model::open(spec, ctx, synthetic_seed, dtype));
  }
  return std::make_unique<gpt2::Model>(gpt2::Model::open(spec, ctx, synthetic_seed, dtype));
}

}  // namespace attnscope
