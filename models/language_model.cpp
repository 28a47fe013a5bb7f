// open_model and the shared part of LanguageModel (models/language_model.h).
#include "models/language_model.h"

#include "models/gpt2/model.h"
#include "models/llama/model.h"

namespace attnscope {

std::string LanguageModel::dtype_summary() const {
  const std::string weights(dtype_name(weight_dtype()));
  if (weight_dtype() == activation_dtype()) return weights;
  return weights + " weights, " + std::string(dtype_name(activation_dtype())) + " activations";
}

std::unique_ptr<LanguageModel> open_model(const std::string& spec, Context& ctx,
                                          std::uint64_t synthetic_seed, DType dtype) {
  if (llama::is_llama(spec)) {
    return std::make_unique<llama::Model>(llama::Model::open(spec, ctx, synthetic_seed, dtype));
  }
  return std::make_unique<gpt2::Model>(gpt2::Model::open(spec, ctx, synthetic_seed, dtype));
}

}  // namespace attnscope
