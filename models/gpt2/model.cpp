// gpt2::Model (models/gpt2/model.h): GPT-2's own parts of the forward pass, the layers' attention
// and MLP blocks and the final layer norm, which LanguageModel::run_step strings together between
// the embedding and the LM head.
#include "models/gpt2/model.h"

#include <utility>

#include "models/gpt2/tensor_map.h"
#include "ops/activation.h"
#include "ops/heads.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "runtime/error.h"

namespace attnscope::gpt2 {

Model::Model(const std::string& spec, Checkpoint checkpoint)
    : LanguageModel(Positions::Learned, spec, checkpoint.dtypes, std::move(checkpoint.stored)),
      config_(std::move(checkpoint.config)),
      weights_(std::move(checkpoint.weights)) {}

Model Model::open(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                  DType dtype) {
  return Model(spec, load_checkpoint(spec, ctx, synthetic_seed, dtype));
}

std::int64_t Model::parameter_count() const { return count_parameters(config_); }

std::int64_t Model::projection_weights() const {
  std::int64_t total = 0;
  for (const LayerWeights& l : weights_.layers) {
    total += l.attn_qkv_weight.numel() + l.attn_out_weight.numel() + l.mlp_up_weight.numel() +
             l.mlp_down_weight.numel();
  }
  return total;
}

std::uint64_t Model::bytes_without_lm_head() const {
  Weights handles = weights_;  // tensor_slots wants a mutable Weights; Tensors copy as handles
  std::uint64_t bytes = 0;
  for (const TensorSlot& slot : tensor_slots(config_, handles)) bytes += slot.destination->nbytes();
  return bytes;
}

void Model::attention_block(Context& ctx, std::int64_t layer_index, Tensor& hidden,
                            const StepKv& kv) const {
  const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(layer_index)];
  Tensor normed = Tensor::empty(hidden.shape(), dtypes_.activations, ctx.allocator());
  ops::layer_norm(ctx, hidden, layer.ln_1_weight, layer.ln_1_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  Tensor qkv =
      Tensor::empty({hidden.dim(0), 3 * config_.d_model}, dtypes_.activations, ctx.allocator());
  ops::linear(ctx, normed, layer.attn_qkv_weight, layer.attn_qkv_bias, qkv);
  const AttentionHeads heads{config_.n_heads, config_.n_heads, config_.head_dim,
                             config_.attention_scale(layer_index), nullptr};
  const Tensor merged = attend(ctx, layer_index, qkv, heads, kv);
  // The residual connection is the projection's own: hidden += merged W_o^T + b_o.
  ops::linear_residual(ctx, merged, layer.attn_out_weight, layer.attn_out_bias, hidden);
}

void Model::mlp_block(Context& ctx, std::int64_t layer_index, Tensor& hidden) const {
  const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(layer_index)];
  Tensor normed = Tensor::empty(hidden.shape(), dtypes_.activations, ctx.allocator());
  ops::layer_norm(ctx, hidden, layer.ln_2_weight, layer.ln_2_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  Tensor up = Tensor::empty({hidden.dim(0), config_.d_ff}, dtypes_.activations, ctx.allocator());
  ops::linear(ctx, normed, layer.mlp_up_weight, layer.mlp_up_bias, up);
  ops::activation(ctx, config_.mlp_activation(), up, up);
  ops::linear_residual(ctx, up, layer.mlp_down_weight, layer.mlp_down_bias, hidden);
}

void Model::final_norm(Context& ctx, const Tensor& hidden, Tensor& normed) const {
  ops::layer_norm(ctx, hidden, weights_.ln_f_weight, weights_.ln_f_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
}

}  // namespace attnscope::gpt2
