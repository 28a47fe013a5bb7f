// Reader for a Hugging Face Llama config.json (models/llama/config.h says what is read and
// refused). The file is read by runtime/input_file.h and its JSON parsed by runtime/strict_json.h
// (NUL bytes, duplicate keys and deep nesting refused); then each key is read with its JSON type
// checked and each value bounded.
//
// Cost: one parse of a small file; nothing here is on a hot path.
#include "models/llama/config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "models/config_fields.h"
#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"

namespace attnscope::llama {
namespace {

using json = nlohmann::json;
using namespace config_fields;

constexpr std::int64_t kMaxVocabSize = std::int64_t{1} << 24;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 24;  // exact as f32 rope positions
constexpr std::int64_t kMaxHiddenSize = std::int64_t{1} << 16;
constexpr std::int64_t kMaxIntermediateSize = std::int64_t{1} << 18;
constexpr std::int64_t kMaxLayers = 1024;
constexpr std::int64_t kMaxHeads = 1024;
constexpr std::int64_t kMaxHeadDim = 1024;

// The value at `key` unless it is absent or null.
const json* present(const json& object, const char* key) {
  const auto found = object.find(key);
  return found == object.end() || found->is_null() ? nullptr : &*found;
}

std::optional<std::int64_t> optional_integer(const json& object, const char* key,
                                             const std::string& label) {
  const json* value = present(object, key);
  if (value == nullptr) return std::nullopt;
  return as_integer(*value, key, label);
}

std::int64_t required_integer(const json& object, const char* key, const std::string& label) {
  const std::optional<std::int64_t> value = optional_integer(object, key, label);
  check(value.has_value(), label, std::string("missing required key ") + key);
  return *value;
}

std::optional<double> optional_number(const json& object, const char* key,
                                      const std::string& label) {
  const json* value = present(object, key);
  if (value == nullptr) return std::nullopt;
  check(value->is_number(), label,
        std::string(key) + " must be a number, found " + describe(*value));
  return value->get<double>();
}

std::optional<bool> optional_bool(const json& object, const char* key, const std::string& label) {
  const json* value = present(object, key);
  if (value == nullptr) return std::nullopt;
  check(value->is_boolean(), label,
        std::string(key) + " must be true or false, found " + describe(*value));
  return value->get<bool>();
}

std::optional<std::string> optional_string(const json& object, const char* key,
                                           const std::string& label) {
  const json* value = present(object, key);
  if (value == nullptr) return std::nullopt;
  check(value->is_string(), label,
        std::string(key) + " must be a string, found " + describe(*value));
  return value->get<std::string>();
}

// rope_scaling (or `key`): none for absent, null or rope_type "default"; the llama3 values for
// "llama3" (its older key "type" is read too, as transformers does); any other type refused.
std::optional<ops::Llama3RopeScaling> read_rope_scaling(const json& root, const char* key,
                                                        const std::string& label) {
  const std::string name = key;
  const json* scaling = present(root, key);
  if (scaling == nullptr) return std::nullopt;
  check(scaling->is_object(), label,
        name + " must be an object or null, found " + describe(*scaling));
  std::optional<std::string> type = optional_string(*scaling, "rope_type", label);
  if (!type) type = optional_string(*scaling, "type", label);
  check(type.has_value(), label, name + " has no rope_type");
  if (*type == "default") return std::nullopt;
  check(*type == "llama3", label,
        name + " type " + single_quoted(*type) + " is not supported (only 'llama3', or none)");
  ops::Llama3RopeScaling llama3;
  for (const auto& [value_key, destination] :
       {std::pair{"factor", &llama3.factor}, std::pair{"low_freq_factor", &llama3.low_freq_factor},
        std::pair{"high_freq_factor", &llama3.high_freq_factor}}) {
    const std::optional<double> value = optional_number(*scaling, value_key, label);
    check(value.has_value(), label, name + " (llama3) is missing " + value_key);
    *destination = *value;
  }
  llama3.original_max_position_embeddings =
      required_integer(*scaling, "original_max_position_embeddings", label);
  check(llama3.factor >= 1.0 && std::isfinite(llama3.factor), label,
        name + " factor = " + format_double(llama3.factor) + " must be finite and >= 1");
  check(llama3.low_freq_factor > 0.0 && llama3.high_freq_factor > llama3.low_freq_factor &&
            std::isfinite(llama3.high_freq_factor),
        label,
        name + " needs 0 < low_freq_factor < high_freq_factor, got " +
            format_double(llama3.low_freq_factor) + " and " +
            format_double(llama3.high_freq_factor));
  check_range(llama3.original_max_position_embeddings, 1, kMaxPositions,
              (name + " original_max_position_embeddings").c_str(), label);
  return llama3;
}

void validate(const LlamaConfig& config, const std::string& label) {
  check_range(config.vocab_size, 1, kMaxVocabSize, "vocab_size", label);
  check_range(config.hidden_size, 1, kMaxHiddenSize, "hidden_size", label);
  check_range(config.intermediate_size, 1, kMaxIntermediateSize, "intermediate_size", label);
  check_range(config.num_hidden_layers, 1, kMaxLayers, "num_hidden_layers", label);
  check_range(config.num_attention_heads, 1, kMaxHeads, "num_attention_heads", label);
  check_range(config.num_key_value_heads, 1, config.num_attention_heads, "num_key_value_heads",
              label);
  check(config.num_attention_heads % config.num_key_value_heads == 0, label,
        "num_attention_heads = " + std::to_string(config.num_attention_heads) +
            " is not a multiple of num_key_value_heads = " +
            std::to_string(config.num_key_value_heads));
  check_range(config.head_dim, 2, kMaxHeadDim, "head_dim", label);
  check(config.head_dim % 2 == 0, label,
        "head_dim = " + std::to_string(config.head_dim) + " must be even (rotary pairs)");
  check(std::isfinite(config.rms_norm_eps) && config.rms_norm_eps > 0 && config.rms_norm_eps < 1,
        label, "rms_norm_eps = " + format_double(config.rms_norm_eps) + " must be in (0, 1)");
  check(std::isfinite(config.rope_theta) && config.rope_theta > 1, label,
        "rope_theta = " + format_double(config.rope_theta) + " must be finite and > 1");
  check_range(config.max_position_embeddings, 1, kMaxPositions, "max_position_embeddings", label);
  if (config.sliding_window) {
    check_range(*config.sliding_window, 1, kMaxPositions, "sliding_window", label);
  }
  for (std::int64_t id : config.eos_token_ids) {
    check_range(id, 0, config.vocab_size - 1, "eos_token_id", label);
  }
  if (config.bos_token_id)
    check_range(*config.bos_token_id, 0, config.vocab_size - 1, "bos_token_id", label);
}

}  // namespace

LlamaConfig parse_llama_config(std::string_view json_text, const std::string& label) {
  const json root = parse_json_refusing_duplicates(json_text, label, "config.json");
  check(root.is_object(), label, "not a JSON object");

  const std::optional<std::string> type = optional_string(root, "model_type", label);
  if (type) {
    check(*type == "llama" || *type == "mistral" || *type == "qwen2" || *type == "qwen3", label,
          "model_type " + single_quoted(*type) +
              " is not supported here (only 'llama', 'mistral', 'qwen2' and 'qwen3')");
  }
  if (const std::optional<std::string> act = optional_string(root, "hidden_act", label)) {
    check(
        *act == "silu", label,
        "hidden_act " + single_quoted(*act) + " is not supported (Llama's MLP is SwiGLU: 'silu')");
  }
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    check(!optional_bool(root, key, label).value_or(false), label,
          std::string(key) + " = true is not supported (biases on every projection)");
  }

  LlamaConfig config;
  config.model_type = type.value_or("llama");
  // Qwen2's biases and Qwen3's head norms, and their configs' defaults where they differ.
  std::int64_t default_head_dim = 0;  // 0: hidden_size / num_attention_heads
  if (config.model_type == "qwen2" || config.model_type == "qwen3") {
    config.qkv_bias = config.model_type == "qwen2";
    config.qk_norm = config.model_type == "qwen3";
    config.max_position_embeddings = 32768;
    config.bos_token_id = std::nullopt;
    config.eos_token_ids = {};
    if (config.qk_norm) default_head_dim = 128;
  }
  if (optional_bool(root, "use_sliding_window", label) != false) {
    config.sliding_window = optional_integer(root, "sliding_window", label);
  }
  config.vocab_size = required_integer(root, "vocab_size", label);
  config.hidden_size = required_integer(root, "hidden_size", label);
  config.intermediate_size = required_integer(root, "intermediate_size", label);
  config.num_hidden_layers = required_integer(root, "num_hidden_layers", label);
  config.num_attention_heads = required_integer(root, "num_attention_heads", label);
  check_range(config.num_attention_heads, 1, kMaxHeads, "num_attention_heads", label);
  config.num_key_value_heads =
      optional_integer(root, "num_key_value_heads", label).value_or(config.num_attention_heads);
  config.head_dim =
      optional_integer(root, "head_dim", label)
          .value_or(default_head_dim != 0 ? default_head_dim
                                          : config.hidden_size / config.num_attention_heads);
  config.rms_norm_eps = optional_number(root, "rms_norm_eps", label).value_or(config.rms_norm_eps);
  // transformers >= 5 writes rope_parameters: rope_theta and the scaling in one object.
  const json* rope_parameters = present(root, "rope_parameters");
  const json& rope_root = rope_parameters != nullptr ? *rope_parameters : root;
  if (rope_parameters != nullptr) {
    check(rope_parameters->is_object(), label,
          "rope_parameters must be an object or null, found " + describe(*rope_parameters));
  }
  config.rope_theta = optional_number(rope_root, "rope_theta", label).value_or(config.rope_theta);
  config.rope_scaling = rope_parameters != nullptr
                            ? read_rope_scaling(root, "rope_parameters", label)
                            : read_rope_scaling(root, "rope_scaling", label);
  // Both keys: transformers folds the older rope_scaling into rope_parameters, so a scaling in
  // one that the other does not repeat would be read differently by the two; refused.
  if (rope_parameters != nullptr && present(root, "rope_scaling") != nullptr) {
    const std::optional<ops::Llama3RopeScaling> legacy =
        read_rope_scaling(root, "rope_scaling", label);
    const auto same = [](const ops::Llama3RopeScaling& a, const ops::Llama3RopeScaling& b) {
      return a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
             a.high_freq_factor == b.high_freq_factor &&
             a.original_max_position_embeddings == b.original_max_position_embeddings;
    };
    check(legacy.has_value() == config.rope_scaling.has_value() &&
              (!legacy || same(*legacy, *config.rope_scaling)),
          label, "rope_scaling and rope_parameters disagree on the RoPE scaling");
  }
  config.max_position_embeddings = optional_integer(root, "max_position_embeddings", label)
                                       .value_or(config.max_position_embeddings);
  config.tie_word_embeddings =
      optional_bool(root, "tie_word_embeddings", label).value_or(config.tie_word_embeddings);
  const auto bos = root.find("bos_token_id");
  if (bos != root.end()) {
    config.bos_token_id =
        bos->is_null() ? std::nullopt : std::optional(as_integer(*bos, "bos_token_id", label));
  }
  config.eos_token_ids = read_eos_token_ids(root, config.eos_token_ids, label);
  validate(config, label);
  return config;
}

LlamaConfig read_llama_config(const std::string& path) {
  return parse_llama_config(read_input_file(path, kMaxConfigBytes, "a config.json"), path);
}

}  // namespace attnscope::llama
