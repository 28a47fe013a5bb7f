// llama::Model (models/llama/model.h): Llama's own parts of the forward pass, the layers'
// attention and SwiGLU blocks and the final RMSNorm, which LanguageModel::run_step strings
// together between the embedding and the LM head.
#include "models/llama/model.h"

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "ops/head_rms_norm.h"
#include "ops/heads.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/swiglu.h"
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

ModelConfig summary_config(const LlamaConfig& llama) {
  ModelConfig config;
  config.model_type = llama.model_type;
  config.vocab_size = llama.vocab_size;
  config.context_length = llama.context_length();
  config.d_model = llama.hidden_size;
  config.n_layers = llama.num_hidden_layers;
  config.n_heads = llama.num_attention_heads;
  config.n_kv_heads = llama.num_key_value_heads;
  config.head_dim = llama.head_dim;
  config.d_ff = llama.intermediate_size;
  config.layer_norm_epsilon = llama.rms_norm_eps;
  config.activation = "silu";
  config.rope_theta = llama.rope_theta;
  config.rope_scaling = rope_scaling_text(llama.rope_scaling);
  config.eos_token_ids = llama.eos_token_ids;
  return config;
}

// cos and sin of every position up to the context length, f32 on ctx's device.
ops::RotaryTable rotary_table_on_device(const LlamaConfig& config, Context& ctx) {
  const std::vector<float> inverse_frequencies =
      ops::rotary_inverse_frequencies(config.head_dim, config.rope_theta, config.rope_scaling);
  ops::RotaryTable table = ops::rotary_table(inverse_frequencies, config.max_position_embeddings,
                                             staging_allocator(ctx));
  if (ctx.device() != Device::CPU) {
    table = {to_device(ctx, table.cos), to_device(ctx, table.sin)};
    ctx.synchronize();
  }
  return table;
}

}  // namespace

Model::Model(const std::string& spec, Checkpoint checkpoint, Context& ctx)
    : LanguageModel(Positions::Rotary, spec, checkpoint.dtypes, std::move(checkpoint.stored)),
      config_(std::move(checkpoint.config)),
      summary_(summary_config(config_)),
      weights_(std::move(checkpoint.weights)),
      rotary_(rotary_table_on_device(config_, ctx)) {}

Model Model::open(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                  DType dtype) {
  return Model(spec, load_checkpoint(spec, ctx, synthetic_seed, dtype), ctx);
}

std::uint64_t Model::bytes_without_lm_head() const {
  std::uint64_t bytes = weights_.token_embedding.nbytes() + weights_.final_norm.nbytes();
  for (const LayerWeights& l : weights_.layers) {
    for (const Tensor* t : {&l.input_norm, &l.qkv, &l.qkv_bias, &l.q_norm, &l.k_norm, &l.out,
                            &l.post_attention_norm, &l.gate_up, &l.down}) {
      bytes += t->nbytes();
    }
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

void Model::attention_block(Context& ctx, std::int64_t layer_index, Tensor& hidden,
                            const StepKv& kv) const {
  const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(layer_index)];
  Tensor normed = Tensor::empty(hidden.shape(), dtypes_.activations, ctx.allocator());
  ops::rms_norm(ctx, hidden, layer.input_norm, static_cast<float>(config_.rms_norm_eps), normed);
  Tensor qkv =
      Tensor::empty({hidden.dim(0), layer.qkv.dim(0)}, dtypes_.activations, ctx.allocator());
  ops::linear(ctx, normed, layer.qkv, layer.qkv_bias, qkv);
  if (config_.qk_norm) {
    ops::head_rms_norm_(ctx, qkv, layer.q_norm, layer.k_norm, config_.num_attention_heads,
                        config_.num_key_value_heads, static_cast<float>(config_.rms_norm_eps));
  }
  const AttentionHeads heads{config_.num_attention_heads, config_.num_key_value_heads,
                             config_.head_dim,
                             1.0f / std::sqrt(static_cast<float>(config_.head_dim)), &rotary_};
  const Tensor merged = attend(ctx, layer_index, qkv, heads, kv);
  ops::linear_residual(ctx, merged, layer.out, Tensor(), hidden);
}

void Model::mlp_block(Context& ctx, std::int64_t layer_index, Tensor& hidden) const {
  const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(layer_index)];
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

void Model::final_norm(Context& ctx, const Tensor& hidden, Tensor& normed) const {
  ops::rms_norm(ctx, hidden, weights_.final_norm, static_cast<float>(config_.rms_norm_eps), normed);
}

}  // namespace attnscope::llama
