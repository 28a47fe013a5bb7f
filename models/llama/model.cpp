// llama::Model (models/llama/model.h): the recipe of Llama's forward pass, from token ids
// through the embedding, the layers' attention and SwiGLU blocks, to the LM head's logits.
#include "models/llama/model.h"

#include <cmath>

#include "ops/embedding.h"
#include "ops/heads.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/swiglu.h"
#include "profiler/scope.h"
#include "runtime/error.h"
#include "runtime/transfer.h"

namespace attnscope::llama {

namespace {

ModelConfig summary_config(const LlamaConfig& llama) {
  ModelConfig config;
  config.model_type = "llama";
  config.vocab_size = llama.vocab_size;
  config.context_length = llama.max_position_embeddings;
  config.d_model = llama.hidden_size;
  config.n_layers = llama.num_hidden_layers;
  config.n_heads = llama.num_attention_heads;
  config.n_kv_heads = llama.num_key_value_heads;
  config.head_dim = llama.head_dim;
  config.d_ff = llama.intermediate_size;
  config.layer_norm_epsilon = llama.rms_norm_eps;
  config.activation = "silu";
  config.eos_token_id = llama.eos_token_ids.empty() ? -1 : llama.eos_token_ids.front();
  return config;
}

}  // namespace

Model Model::open(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                  DType dtype) {
  Checkpoint checkpoint = load_checkpoint(spec, ctx, synthetic_seed, dtype);
  Model model;
  model.source_ = spec;
  model.config_ = checkpoint.config;
  model.dtypes_ = checkpoint.dtypes;
  model.weights_ = std::move(checkpoint.weights);
  model.stored_ = std::move(checkpoint.stored);
  const std::vector<float> inverse_frequencies = ops::rotary_inverse_frequencies(
      model.config_.head_dim, model.config_.rope_theta, model.config_.rope_scaling);
  Allocator& host = ctx.device() == Device::CPU ? ctx.allocator() : ctx.host_allocator();
  model.rotary_ =
      ops::rotary_table(inverse_frequencies, model.config_.max_position_embeddings, host);
  if (ctx.device() != Device::CPU) {
    model.rotary_ = {to_device(ctx, model.rotary_.cos), to_device(ctx, model.rotary_.sin)};
    ctx.synchronize();
  }
  model.summary_ = summary_config(model.config_);
  model.set_attention("naive");
  return model;
}

std::uint64_t Model::weight_bytes() const {
  std::uint64_t bytes = weights_.token_embedding.nbytes() + weights_.final_norm.nbytes();
  for (const LayerWeights& l : weights_.layers) {
    for (const Tensor* t :
         {&l.input_norm, &l.qkv, &l.out, &l.post_attention_norm, &l.gate_up, &l.down}) {
      bytes += t->nbytes();
    }
  }
  if (weights_.lm_head.raw_data() != weights_.token_embedding.raw_data()) {
    bytes += weights_.lm_head.nbytes();
  }
  return bytes;
}

std::int64_t Model::projection_weights() const {
  std::int64_t total = 0;
  for (const LayerWeights& l : weights_.layers) {
    total += l.qkv.numel() + l.out.numel() + l.gate_up.numel() + l.down.numel();
  }
  return total;
}

void Model::set_attention(std::string_view name) {
  attention_ = &ops::attention::find_backend(name);
}

KVCache Model::new_cache(Context& ctx, std::int64_t batch, std::int64_t capacity) const {
  check(capacity >= 1 && capacity <= config_.max_position_embeddings, "kv cache",
        "capacity " + std::to_string(capacity) + " must be in [1, context length " +
            std::to_string(config_.max_position_embeddings) + "]");
  return KVCache(config_.num_hidden_layers, batch, config_.num_key_value_heads, capacity,
                 config_.head_dim, dtypes_.activations, ctx.allocator());
}

Tensor Model::forward(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t batch,
                      KVCache& cache, gpt2::StepRunner& runner, bool all_positions) const {
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
  check(start + length <= config_.max_position_embeddings, "forward",
        std::to_string(start + length) + " tokens exceed the model's context length of " +
            std::to_string(config_.max_position_embeddings));
  check(start + length <= cache.capacity(), "forward",
        std::to_string(start + length) + " tokens exceed the KV cache capacity of " +
            std::to_string(cache.capacity()));

  // Every token reads position row 0 of the zero table (Weights::no_position): step_inputs'
  // positions are start + i % length, so rows of length 1 starting at 0 give all zeros. The
  // token positions themselves reach the model as the cache length, through the rotary op.
  const gpt2::StepInputs inputs = gpt2::step_inputs(ctx, tokens, 1, 0, config_.vocab_size);
  Tensor logits = runner.run(
      ctx, length == 1, [&] { return run_step(ctx, inputs, batch, length, cache, all_positions); });
  cache.advance(length);
  return logits;
}

Tensor Model::run_step(Context& ctx, const gpt2::StepInputs& inputs, std::int64_t batch,
                       std::int64_t length, KVCache& cache, bool all_positions) const {
  const std::int64_t width = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  Allocator& allocator = ctx.allocator();
  Tensor hidden = Tensor::empty({batch * length, width}, dtypes_.activations, allocator);
  if (inputs.device_ids.defined()) {
    ops::embedding(ctx, weights_.token_embedding, weights_.no_position, inputs.device_ids,
                   inputs.device_positions, hidden);
  } else {
    ops::embedding(ctx, weights_.token_embedding, weights_.no_position, inputs.tokens,
                   inputs.positions, hidden);
  }

  for (std::int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    profiler::Scope layer_scope(ctx, "layer", "layer");
    const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(i)];
    attention_block(ctx, layer, i, hidden, batch, length, cache);
    mlp_block(ctx, layer, hidden);
  }

  // Only the rows whose logits are wanted go through the final norm and the LM head.
  const std::int64_t rows = all_positions ? length : 1;
  const Tensor last = rows_for_logits(ctx, hidden, batch, length, all_positions);
  Tensor normed = Tensor::empty(last.shape(), dtypes_.activations, allocator);
  ops::rms_norm(ctx, last, weights_.final_norm, eps, normed);
  Tensor logits = Tensor::empty({batch * rows, config_.vocab_size}, DType::F32, allocator);
  ops::linear(ctx, normed, weights_.lm_head, Tensor(), logits);
  return logits.reshape({batch, rows, config_.vocab_size});
}

void Model::attention_block(Context& ctx, const LayerWeights& layer, std::int64_t layer_index,
                            Tensor& hidden, std::int64_t batch, std::int64_t tokens,
                            KVCache& cache) const {
  profiler::Scope scope(ctx, "attention_block", "block");
  const std::int64_t width = config_.hidden_size;
  const std::int64_t heads = config_.num_attention_heads;
  const std::int64_t head_dim = config_.head_dim;
  const std::int64_t rows = batch * tokens;
  Allocator& allocator = ctx.allocator();

  Tensor normed = Tensor::empty({rows, width}, dtypes_.activations, allocator);
  ops::rms_norm(ctx, hidden, layer.input_norm, static_cast<float>(config_.rms_norm_eps), normed);
  const std::int64_t qkv_width = layer.qkv.dim(0);
  Tensor qkv = Tensor::empty({rows, qkv_width}, dtypes_.activations, allocator);
  ops::linear(ctx, normed, layer.qkv, Tensor(), qkv);

  ops::attention::Call call;
  call.q = Tensor::empty({batch, heads, tokens, head_dim}, dtypes_.activations, allocator);
  call.k = cache.keys(layer_index);
  call.v = cache.values(layer_index);
  call.kv_len = cache.length() + tokens;
  call.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  ops::split_qkv(ctx, qkv.reshape({batch, tokens, qkv_width}), call.q, call.k, call.v,
                 cache.length());
  ops::rotary_embedding_(ctx, call.q, call.k, rotary_, cache.length());
  call.out = Tensor::empty(call.q.shape(), dtypes_.activations, allocator);
  attention_->attend(ctx, call);

  // [B, Hq, T, D] -> [B, T, Hq D]; with one token per row the two layouts are the same bytes.
  const std::int64_t attended = heads * head_dim;
  Tensor merged = call.out.reshape({batch, tokens, attended});
  if (tokens > 1) {
    merged = Tensor::empty({batch, tokens, attended}, dtypes_.activations, allocator);
    ops::merge_heads(ctx, call.out, merged);
  }
  ops::linear_residual(ctx, merged.reshape({rows, attended}), layer.out, Tensor(), hidden);
}

void Model::mlp_block(Context& ctx, const LayerWeights& layer, Tensor& hidden) const {
  profiler::Scope scope(ctx, "mlp_block", "block");
  const std::int64_t rows = hidden.dim(0);
  const std::int64_t units = config_.intermediate_size;
  Allocator& allocator = ctx.allocator();
  Tensor normed = Tensor::empty(hidden.shape(), dtypes_.activations, allocator);
  ops::rms_norm(ctx, hidden, layer.post_attention_norm, static_cast<float>(config_.rms_norm_eps),
                normed);
  Tensor gate_up = Tensor::empty({rows, 2 * units}, dtypes_.activations, allocator);
  ops::linear(ctx, normed, layer.gate_up, Tensor(), gate_up);
  Tensor gated = Tensor::empty({rows, units}, dtypes_.activations, allocator);
  ops::swiglu(ctx, gate_up, gated);
  ops::linear_residual(ctx, gated, layer.down, Tensor(), hidden);
}

}  // namespace attnscope::llama
