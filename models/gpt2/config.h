// GPT-2's configuration, read from a Hugging Face `config.json`.
//
// GPT-2 spells its hyperparameters n_embd, n_layer, n_head, n_positions (or n_ctx), vocab_size,
// n_inner (null: 4 x n_embd), layer_norm_epsilon, activation_function, scale_attn_weights,
// scale_attn_by_inverse_layer_idx, eos_token_id (one id or a list; null: none). They are read into
// the family-neutral summary (ModelConfig, models/model_config.h: head_dim = n_embd / n_head)
// plus GPT-2's own score scaling, and checked: every value must be present where required, of the
// right JSON type, and inside sane bounds, so a hostile or broken file is refused with a clear
// message before any memory is sized from it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "models/model_config.h"
#include "runtime/activation.h"

namespace attnscope::gpt2 {

struct Gpt2Config : ModelConfig {
  // transformers' GPT2Config defaults for what a config.json may leave out.
  Gpt2Config() {
    model_type = "gpt2";
    layer_norm_epsilon = 1e-5;
    activation = "gelu_new";
    eos_token_ids = {50256};  // <|endoftext|>
  }
  bool scale_attn_weights = true;                // scores divided by sqrt(D)
  bool scale_attn_by_inverse_layer_idx = false;  // and by layer_index + 1

  // The MLP's activation (validate_gpt2_config has checked the name).
  Activation mlp_activation() const { return *find_activation(activation); }
  // The factor layer `layer_index` (from 0) multiplies its attention scores q . k by, as
  // transformers' GPT2Attention computes it: 1 / sqrt(D) when scale_attn_weights (else 1),
  // divided by (layer_index + 1) when scale_attn_by_inverse_layer_idx.
  float attention_scale(std::int64_t layer_index) const;
};

// Parses config.json text; `label` names the source in errors. Validates (see
// validate_gpt2_config).
Gpt2Config parse_gpt2_config(std::string_view json_text, const std::string& label);
// Reads and parses a config.json file.
Gpt2Config read_gpt2_config(const std::string& path);
// Throws Error unless every field is in its sane range and the shapes agree
// (d_model divisible by n_heads, n_heads divisible by n_kv_heads, ...). An eos_token_id outside
// the vocabulary is allowed (see ModelConfig::eos_token_ids).
void validate_gpt2_config(const Gpt2Config& config, const std::string& label);

}  // namespace attnscope::gpt2
