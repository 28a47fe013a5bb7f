// gpt2::Model (models/gpt2/model.h): the recipe of GPT-2's forward pass, from token ids through
// the embedding, the layers' attention and MLP blocks, to the LM head's logits.
#include "models/gpt2/model.h"

#include <algorithm>

#include "models/gpt2/tensor_map.h"
#include "ops/activation.h"
#include "ops/embedding.h"
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

void Model::set_attention(std::string_view name) {
  attention_ = &ops::attention::find_backend(name);
}

KVCache Model::new_cache(Context& ctx, std::int64_t batch, std::int64_t capacity) const {
  check(capacity >= 1 && capacity <= config_.context_length, "kv cache",
        "capacity " + std::to_string(capacity) + " must be in [1, context length " +
            std::to_string(config_.context_length) + "]");
  return KVCache(config_.n_layers, batch, config_.n_kv_heads, capacity, config_.head_dim,
                 dtypes_.activations, ctx.allocator());
}

Tensor Model::forward(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t batch,
                      KVCache& cache, StepRunner& runner, bool all_positions) const {
  profiler::Scope scope(ctx, "forward", "step");
  check(batch >= 1 && cache.batch() == batch, "forward",
        "batch " + std::to_string(batch) + " does not match the cache's " +
            std::to_string(cache.batch()));
  const auto total = static_cast<std::int64_t>(tokens.size());
  check(
      total > 0 && total % batch == 0, "forward",
      std::to_string(total) + " tokens do not split into " + std::to_string(batch) + " equal rows");
  const std::int64_t length = total / batch;
  const std::int64_t start = cache.length();
  check(start + length <= config_.context_length, "forward",
        std::to_string(start + length) + " tokens exceed the model's context length of " +
            std::to_string(config_.context_length));
  check(start + length <= cache.capacity(), "forward",
        std::to_string(start + length) + " tokens exceed the KV cache capacity of " +
            std::to_string(cache.capacity()));

  const StepInputs inputs = step_inputs(ctx, tokens, length, start, config_.vocab_size);
  Tensor logits = runner.run(
      ctx, length == 1, [&] { return run_step(ctx, inputs, batch, length, cache, all_positions); });
  cache.advance(length);
  return logits;
}

Tensor Model::run_step(Context& ctx, const StepInputs& inputs, std::int64_t batch,
                       std::int64_t length, KVCache& cache, bool all_positions) const {
  const std::int64_t width = config_.d_model;
  Allocator& allocator = ctx.allocator();
  Tensor hidden = Tensor::empty({batch * length, width}, dtypes_.activations, allocator);
  if (inputs.device_ids.defined()) {
    ops::embedding(ctx, weights_.token_embedding, weights_.position_embedding, inputs.device_ids,
                   inputs.device_positions, hidden);
  } else {
    ops::embedding(ctx, weights_.token_embedding, weights_.position_embedding, inputs.tokens,
                   inputs.positions, hidden);
  }

  for (std::int64_t i = 0; i < config_.n_layers; ++i) {
    profiler::Scope layer_scope(ctx, "layer", "layer");
    const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(i)];
    attention_block(ctx, layer, i, hidden, batch, length, cache);
    mlp_block(ctx, layer, hidden);
  }

  // Only the rows whose logits are wanted go through the final norm and the LM head.
  const std::int64_t rows = all_positions ? length : 1;
  const Tensor last = rows_for_logits(ctx, hidden, batch, length, all_positions);
  Tensor normed = Tensor::empty(last.shape(), dtypes_.activations, allocator);
  ops::layer_norm(ctx, last, weights_.ln_f_weight, weights_.ln_f_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  Tensor logits = Tensor::empty({batch * rows, config_.vocab_size}, DType::F32, allocator);
  ops::linear(ctx, normed, weights_.lm_head, Tensor(), logits);
  return logits.reshape({batch, rows, config_.vocab_size});
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

  ops::attention::Call call;
  call.q = Tensor::empty({batch, heads, tokens, head_dim}, dtypes_.activations, allocator);
  call.k = cache.keys(layer_index);
  call.v = cache.values(layer_index);
  call.kv_len = cache.length() + tokens;
  call.scale = config_.attention_scale(layer_index);
  ops::split_qkv(ctx, qkv.reshape({batch, tokens, 3 * width}), call.q, call.k, call.v,
                 cache.length());
  call.out = Tensor::empty(call.q.shape(), dtypes_.activations, allocator);
  attention_->attend(ctx, call);

  // [B, H, T, D] -> [B, T, H D]; with one token per row the two layouts are the same bytes.
  Tensor merged = call.out.reshape({batch, tokens, width});
  if (tokens > 1) {
    merged = Tensor::empty({batch, tokens, width}, dtypes_.activations, allocator);
    ops::merge_heads(ctx, call.out, merged);
  }
  // The residual connection is the projection's own: hidden += merged W_o^T + b_o.
  ops::linear_residual(ctx, merged.reshape({rows, width}), layer.attn_out_weight,
                       layer.attn_out_bias, hidden);
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
