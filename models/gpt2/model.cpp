// gpt2::Model (models/gpt2/model.h): the recipe of GPT-2's forward pass, from token ids through
// the embedding, the layers' attention and MLP blocks, to the LM head's logits.
#include "models/gpt2/model.h"

#include "models/gpt2/tensor_map.h"
#include "ops/activation.h"
#include "ops/heads.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "profiler/scope.h"
#include "runtime/error.h"

namespace attnscope::gpt2 {

Model Model::open(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                  DType dtype) {
  Checkpoint checkpoint = load_checkpoint(spec, ctx, synthetic_seed, dtype);
  Model model;
  model.source_ = spec;
  model.dtypes_ = checkpoint.dtypes;
  model.config_ = checkpoint.config;
  model.weights_ = std::move(checkpoint.weights);
  model.stored_ = std::move(checkpoint.stored);
  model.config_.positions = "learned";
  model.config_.tied_embeddings =
      model.weights_.lm_head.raw_data() == model.weights_.token_embedding.raw_data();
  model.set_attention("naive");
  return model;
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

std::uint64_t Model::weight_bytes() const {
  Weights handles = weights_;  // tensor_slots wants a mutable Weights; Tensors copy as handles
  std::uint64_t bytes = 0;
  for (const TensorSlot& slot : tensor_slots(config_, handles)) bytes += slot.destination->nbytes();
  if (weights_.lm_head.raw_data() != weights_.token_embedding.raw_data()) {
    bytes += weights_.lm_head.nbytes();
  }
  return bytes;
}

Tensor Model::run_step(Context& ctx, const StepInputs& inputs, std::int64_t batch,
                       std::int64_t length, KVCache& cache, bool all_positions) const {
  const std::int64_t width = config_.d_model;
  Allocator& allocator = ctx.allocator();
  Tensor hidden = embed(ctx, inputs, weights_.token_embedding, weights_.position_embedding,
                        batch * length, width);

  for (std::int64_t i = 0; i < config_.n_layers; ++i) {
    profiler::Scope layer_scope(ctx, "layer", "layer");
    const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(i)];
    attention_block(ctx, layer, i, hidden, batch, length, cache);
    mlp_block(ctx, layer, hidden);
  }

  // Only the rows whose logits are wanted go through the final norm and the LM head.
  const Tensor last = rows_for_logits(ctx, hidden, batch, length, all_positions);
  Tensor normed = Tensor::empty(last.shape(), dtypes_.activations, allocator);
  ops::layer_norm(ctx, last, weights_.ln_f_weight, weights_.ln_f_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  return lm_head_logits(ctx, normed, weights_.lm_head, batch);
}

void Model::attention_block(Context& ctx, const LayerWeights& layer, std::int64_t layer_index,
                            Tensor& hidden, std::int64_t batch, std::int64_t tokens,
                            KVCache& cache) const {
  profiler::Scope scope(ctx, "attention_block", "block");
  const std::int64_t width = config_.d_model;
  const std::int64_t heads = config_.n_heads;
  const std::int64_t head_dim = config_.head_dim;
  const std::int64_t rows = batch * tokens;
  Allocator& allocator = ctx.allocator();

  Tensor normed = Tensor::empty({rows, width}, dtypes_.activations, allocator);
  ops::layer_norm(ctx, hidden, layer.ln_1_weight, layer.ln_1_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  Tensor qkv = Tensor::empty({rows, 3 * width}, dtypes_.activations, allocator);
  ops::linear(ctx, normed, layer.attn_qkv_weight, layer.attn_qkv_bias, qkv);

  ops::attention::Call call = attention_call(ctx, cache, layer_index, heads, tokens, head_dim,
                                             config_.attention_scale(layer_index));
  ops::split_qkv(ctx, qkv.reshape({batch, tokens, 3 * width}), call.q, call.k, call.v,
                 cache.length());
  const Tensor merged = attend_and_merge_heads(ctx, call);
  // The residual connection is the projection's own: hidden += merged W_o^T + b_o.
  ops::linear_residual(ctx, merged, layer.attn_out_weight, layer.attn_out_bias, hidden);
}

void Model::mlp_block(Context& ctx, const LayerWeights& layer, Tensor& hidden) const {
  profiler::Scope scope(ctx, "mlp_block", "block");
  const std::int64_t rows = hidden.dim(0);
  Allocator& allocator = ctx.allocator();
  Tensor normed = Tensor::empty(hidden.shape(), dtypes_.activations, allocator);
  ops::layer_norm(ctx, hidden, layer.ln_2_weight, layer.ln_2_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  Tensor up = Tensor::empty({rows, config_.d_ff}, dtypes_.activations, allocator);
  ops::linear(ctx, normed, layer.mlp_up_weight, layer.mlp_up_bias, up);
  ops::activation(ctx, config_.mlp_activation(), up, up);
  ops::linear_residual(ctx, up, layer.mlp_down_weight, layer.mlp_down_bias, hidden);
}

}  // namespace attnscope::gpt2
