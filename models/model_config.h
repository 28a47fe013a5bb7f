// ModelConfig: the shape of a model as the tools see it, whichever family it is.
//
// Each family reads its own config.json schema (models/gpt2/config.h, models/llama/config.h)
// and hands the tools this summary (LanguageModel::config()): what they size buffers, caches and
// cost models from, and where generation stops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace attnscope {

struct ModelConfig {
  std::string model_type;  // "gpt2", "llama", "mistral"
  std::int64_t vocab_size = 0;
  std::int64_t context_length = 0;  // the most positions a sequence may hold
  std::int64_t d_model = 0;         // the width of the residual stream
  std::int64_t n_layers = 0;
  std::int64_t n_heads = 0;     // query heads
  std::int64_t n_kv_heads = 0;  // key/value heads (= n_heads without grouped-query attention)
  // The width of one attention head, set by each family's loader: GPT-2 splits d_model evenly
  // (d_model / n_heads); a Llama config.json may set head_dim to anything.
  std::int64_t head_dim = 0;
  std::int64_t d_ff = 0;            // the MLP's hidden units
  double layer_norm_epsilon = 0.0;  // the norms' epsilon
  std::string activation;           // the MLP's activation, a name of runtime/activation.h
  // A rotary family's base and scaling ("none", or "llama3 factor=F low_freq_factor=L
  // high_freq_factor=H original=N"); unset for learned positions (LanguageModel::positions_name).
  double rope_theta = 0.0;
  std::string rope_scaling;
  // Generation stops at any of these, as transformers' does at each id of config.json's
  // eos_token_id (a list in Llama 3.1 Instruct: <|end_of_text|>, <|eom_id|> and <|eot_id|>, the
  // one a chat turn ends with); the first also starts an empty prompt. transformers accepts an id
  // outside the vocabulary (GPT2Config's default 50256 saved with a small vocabulary); such a
  // model simply never produces it (see eos_in_vocabulary).
  std::vector<std::int64_t> eos_token_ids;

  // The first eos id, -1 without one.
  std::int64_t eos_token_id() const { return eos_token_ids.empty() ? -1 : eos_token_ids.front(); }
  bool is_eos(std::int64_t token) const {
    return std::find(eos_token_ids.begin(), eos_token_ids.end(), token) != eos_token_ids.end();
  }
  bool eos_in_vocabulary() const { return 0 <= eos_token_id() && eos_token_id() < vocab_size; }
};

}  // namespace attnscope
