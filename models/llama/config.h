// Llama-family model configuration, read from a Hugging Face `config.json` of a
// LlamaForCausalLM checkpoint (Llama 2 / 3.x, SmolLM2, TinyLlama), a MistralForCausalLM one
// (Mistral 7B: Llama's blocks, with a sliding window), a Qwen2ForCausalLM one (Qwen2, Qwen2.5:
// Llama's blocks with a bias on the query, key and value projections; model_type "qwen2") or a
// Qwen3ForCausalLM one (Qwen3: an RMSNorm on each query and key head before RoPE, no biases;
// model_type "qwen3").
//
// Read: vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads
// (required); num_key_value_heads (default: num_attention_heads), head_dim (default:
// hidden_size / num_attention_heads), rms_norm_eps (1e-6), rope_theta (10000), rope_scaling
// (absent, null or rope_type "default": none; "llama3" with its four values; transformers >= 5
// writes both as one rope_parameters object, which is read instead when present),
// max_position_embeddings (2048), sliding_window (null; ignored when use_sliding_window is
// false), tie_word_embeddings (false), bos_token_id (1) and eos_token_id (2; an integer or a
// list of integers, as Llama 3.1 Instruct has). The defaults are transformers' LlamaConfig's;
// for qwen2 and qwen3 their configs' where they differ (max_position_embeddings 32768, no bos or
// eos; qwen3's head_dim 128).
// A sliding window of W keys is the plain causal attention of every sequence up to W tokens
// long, so attnscope runs such a model with a context of W (context_length()).
// Refused with one line each: a model_type other than "llama", "mistral", "qwen2" and "qwen3",
// hidden_act other than "silu", any other rope_scaling type (linear, dynamic, yarn, longrope, ...),
// attention_bias or mlp_bias true (biases on every projection). Every integer must be a
// JSON integer, every number a number, and each value within sane bounds before anything is
// sized from it; keys attnscope does not use are ignored.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/rotary_embedding.h"

namespace attnscope::llama {

struct LlamaConfig {
  std::string model_type = "llama";  // or "mistral", "qwen2", "qwen3"
  bool qkv_bias = false;             // q_proj, k_proj and v_proj have a bias (qwen2)
  bool qk_norm = false;              // an RMSNorm on each q and k head before RoPE (qwen3)
  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_hidden_layers = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;
  std::int64_t head_dim = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<ops::Llama3RopeScaling> rope_scaling;  // rope_type "llama3", else none
  std::int64_t max_position_embeddings = 2048;
  std::optional<std::int64_t> sliding_window;  // keys a query sees at most, when in use
  bool tie_word_embeddings = false;
  std::optional<std::int64_t> bos_token_id = 1;  // null in some configs
  std::vector<std::int64_t> eos_token_ids = {2};

  // Query heads per key/value head (1: multi-head attention).
  std::int64_t group_size() const { return num_attention_heads / num_key_value_heads; }
  // The positions attnscope runs: max_position_embeddings, or the sliding window when shorter
  // (within it, the window is plain causal attention).
  std::int64_t context_length() const {
    return sliding_window ? std::min(max_position_embeddings, *sliding_window)
                          : max_position_embeddings;
  }
};

// Parses config.json text (duplicate keys refused); `label` names the source in errors.
LlamaConfig parse_llama_config(std::string_view json_text, const std::string& label);
// Reads and parses a config.json file.
LlamaConfig read_llama_config(const std::string& path);

}  // namespace attnscope::llama
