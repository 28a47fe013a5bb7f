// The synthetic Llama shapes (models/llama/weights.h): the real configs of SmolLM2-135M,
// Llama 3.2 1B, Qwen2.5-0.5B and Qwen3-0.6B (from their config.json files), and a tiny one for
// tests. Weights are seeded random (models/llama/weights.cpp), so benchmarks and profiles run
// without a download.
#include "models/llama/weights.h"
#include "models/synthetic_shapes.h"
#include "runtime/error.h"

namespace attnscope::llama {

namespace {

struct SyntheticShape {
  const char* name;
  std::int64_t vocab, hidden, intermediate, layers, heads, kv_heads, head_dim, positions;
  double rope_theta;
  bool tied, llama3_scaling, qkv_bias, qk_norm;
};

constexpr SyntheticShape kShapes[] = {
    {"llama-tiny", 512, 64, 128, 2, 4, 2, 16, 256, 10000.0, false, true, false, false},
    {"smollm2-135m", 49152, 576, 1536, 30, 9, 3, 64, 8192, 100000.0, true, false, false, false},
    {"llama-3.2-1b", 128256, 2048, 8192, 16, 32, 8, 64, 131072, 500000.0, true, true, false, false},
    {"qwen2.5-0.5b", 151936, 896, 4864, 24, 14, 2, 64, 32768, 1000000.0, true, false, true, false},
    {"qwen3-0.6b", 151936, 1024, 3072, 28, 16, 8, 128, 40960, 1000000.0, true, false, false, true},
};

}  // namespace

std::vector<std::string> synthetic_names() { return synthetic_shape_names(kShapes); }

LlamaConfig synthetic_config(const std::string& name) {
  const SyntheticShape& s = find_synthetic_shape(kShapes, name, "synthetic Llama model");
  LlamaConfig config;
  if (s.qkv_bias) config.model_type = "qwen2";
  if (s.qk_norm) config.model_type = "qwen3";
  config.qkv_bias = s.qkv_bias;
  config.qk_norm = s.qk_norm;
  config.vocab_size = s.vocab;
  config.hidden_size = s.hidden;
  config.intermediate_size = s.intermediate;
  config.num_hidden_layers = s.layers;
  config.num_attention_heads = s.heads;
  config.num_key_value_heads = s.kv_heads;
  config.head_dim = s.head_dim;
  config.rms_norm_eps = 1e-5;
  config.rope_theta = s.rope_theta;
  // Llama 3.2's values (factor 32); the tiny model uses them too, so tests exercise them.
  if (s.llama3_scaling) config.rope_scaling = ops::Llama3RopeScaling{32.0, 1.0, 4.0, 8192};
  config.max_position_embeddings = s.positions;
  config.tie_word_embeddings = s.tied;
  config.bos_token_id = 1;
  config.eos_token_ids = {2};
  return config;
}

}  // namespace attnscope::llama
