// llama::Model (models/llama/model.h): the recipe of Llama's forward pass, from token ids
// through the embedding, the layers' attention and SwiGLU blocks, to the LM head's logits.
#include "models/llama/model.h"

#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include "ops/heads.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/swiglu.h"
#include "profiler/scope.h"
#include "runtime/error.h"
#include "runtime/transfer.h"

namespace attnscope::llama {

namespace {

// "none", or "llama3 factor=8 low_freq_factor=1 high_freq_factor=4 original=8192".
std::string rope_scaling_text(const std::optional<ops::Llama3RopeScaling>& scaling) {
  if (!scaling) return "none";
  std::ostringstream text;
  text << "llama3 factor=" << scaling->factor << " low_freq_factor=" << scaling->low_freq_factor
       << " high_freq_factor=" << scaling->high_freq_factor
       << " original=" << scaling->original_max_position_embeddings;
  return text.str();
}

ModelConfig summary_config(const LlamaConfig& llama, const Weights& weights) {
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
  config.positions = "rotary";
  config.rope_theta = llama.rope_theta;
  config.rope_scaling = rope_scaling_text(llama.rope_scaling);
  config.tied_embeddings = weights.lm_head.raw_data() == weights.token_embedding.raw_data();
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
  model.rotary_ = ops::rotary_table(inverse_frequencies, model.config_.max_position_embeddings,
                                    staging_allocator(ctx));
  if (ctx.device() != Device::CPU) {
    model.rotary_ = {to_device(ctx, model.rotary_.cos), to_device(ctx, model.rotary_.sin)};
    ctx.synchronize();
  }
  model.summary_ = summary_config(model.config_, model.weights_);
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

Tensor Model::run_step(Context& ctx, const StepInputs& inputs, std::int64_t batch,
                       std::int64_t length, KVCache& cache, bool all_positions) const {
  const std::int64_t width = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  Allocator& allocator = ctx.allocator();
  Tensor hidden =
      embed(ctx, inputs, weights_.token_embedding, weights_.no_position, batch * length, width);

  for (std::int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    profiler::Scope layer_scope(ctx, "layer", "layer");
    const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(i)];
    attention_block(ctx, layer, i, hidden, batch, length, cache);
    mlp_block(ctx, layer, hidden);
  }

  // Only the rows whose logits are wanted go through the final norm and the LM head.
  const Tensor last = rows_for_logits(ctx, hidden, batch, length, all_positions);
  Tensor normed = Tensor::empty(last.shape(), dtypes_.activations, allocator);
  ops::rms_norm(ctx, last, weights_.final_norm, eps, normed);
  return lm_head_logits(ctx, normed, weights_.lm_head, batch);
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

  ops::attention::Call call = attention_call(ctx, cache, layer_index, heads, tokens, head_dim,
                                             1.0f / std::sqrt(static_cast<float>(head_dim)));
  ops::split_qkv(ctx, qkv.reshape({batch, tokens, qkv_width}), call.q, call.k, call.v,
                 cache.length());
  ops::rotary_embedding_(ctx, call.q, call.k, rotary_, cache.length());
  const Tensor merged = attend_and_merge_heads(ctx, call);
  ops::linear_residual(ctx, merged, layer.out, Tensor(), hidden);
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
