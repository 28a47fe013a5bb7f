// Model configuration, read from a Hugging Face `config.json`.
//
// GPT-2 spells its hyperparameters n_embd, n_layer, n_head, n_positions (or n_ctx), vocab_size,
// n_inner (null: 4 x n_embd), layer_norm_epsilon, activation_function, scale_attn_weights,
// scale_attn_by_inverse_layer_idx, eos_token_id. They are read into one
// neutral struct (head_dim = n_embd / n_head) and checked: every value must be present where
// required, of the right JSON type, and inside sane bounds, so a hostile or broken file is refused
// with a clear message before any memory is sized from it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/activation.h"

namespace attnscope {

struct ModelConfig {
  std::string model_type = "gpt2";
  std::int64_t vocab_size = 0;
  std::int64_t context_length = 0;  // n_positions
  std::int64_t d_model = 0;         // n_embd
  std::int64_t n_layers = 0;        // n_layer
  std::int64_t n_heads = 0;         // n_head
  std::int64_t n_kv_heads = 0;      // = n_heads for GPT-2
  // The width of one attention head, set by each family's loader: GPT-2 splits d_model evenly
  // (d_model / n_heads); a Llama config.json may set head_dim to anything.
  std::int64_t head_dim = 0;
  std::int64_t d_ff = 0;  // n_inner, or 4 x d_model
  double layer_norm_epsilon = 1e-5;
  std::string activation = "gelu_new";  // a name of kActivationNames (runtime/activation.h)
  // <|endoftext|>: generation stops there, and an empty prompt starts from it. transformers
  // accepts an id outside the vocabulary (its GPT2Config default 50256 saved with a small
  // vocabulary); such a model simply never produces it (see eos_in_vocabulary).
  std::int64_t eos_token_id = 50256;
  bool scale_attn_weights = true;                // scores divided by sqrt(D)
  bool scale_attn_by_inverse_layer_idx = false;  // and by layer_index + 1

  bool eos_in_vocabulary() const { return 0 <= eos_token_id && eos_token_id < vocab_size; }
  // The MLP's activation (validate_config has checked the name).
  Activation mlp_activation() const { return *find_activation(activation); }
  // The factor layer `layer_index` (from 0) multiplies its attention scores q . k by, as
  // transformers' GPT2Attention computes it: 1 / sqrt(D) when scale_attn_weights (else 1),
  // divided by (layer_index + 1) when scale_attn_by_inverse_layer_idx.
  float attention_scale(std::int64_t layer_index) const;
};

// Parses config.json text; `label` names the source in errors. Validates (see validate_config).
ModelConfig parse_model_config(std::string_view json_text, const std::string& label);
// Reads and parses a config.json file.
ModelConfig read_model_config(const std::string& path);
// Throws Error unless every field is in its sane range and the shapes agree
// (d_model divisible by n_heads, n_heads divisible by n_kv_heads, ...). An eos_token_id outside
// the vocabulary is allowed (see ModelConfig::eos_token_id).
void validate_config(const ModelConfig& config, const std::string& label);

}  // namespace attnscope
