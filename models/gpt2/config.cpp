// Reader for a Hugging Face GPT-2 config.json.
//
// Checked: the text is JSON (the parser's line and column are reported otherwise) and an
// object; vocab_size, n_embd, n_layer, n_head and n_positions (or its older name n_ctx) are
// present; every integer is a JSON integer (not 12.5, "12", true or null), every string a
// string; then validate_gpt2_config bounds each value so that nothing absurd sizes an
// allocation. The file is read by runtime/input_file.h and parsed by runtime/strict_json.h.
// Keys attnscope does not use are ignored, as config.json carries many.
//
// Cost: one parse of a small file; nothing here is on a hot path.

#include "models/gpt2/config.h"

#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "models/config_fields.h"
#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"

namespace attnscope::gpt2 {
namespace {

using json = nlohmann::json;
using namespace config_fields;

constexpr std::int64_t kMaxVocabSize = std::int64_t{1} << 24;
constexpr std::int64_t kMaxContextLength = std::int64_t{1} << 20;
constexpr std::int64_t kMaxDModel = std::int64_t{1} << 16;
constexpr std::int64_t kMaxLayers = 1024;
constexpr std::int64_t kMaxHeads = 1024;
constexpr std::int64_t kMaxDFF = std::int64_t{1} << 18;

// Activations of transformers' ACT2FN that carry learned parameters (stored in the checkpoint
// as h.{i}.mlp.act.*): known names, refused with their own reason.
constexpr std::array<std::string_view, 2> kLearnedActivations = {"prelu", "xielu"};

// A string in JSON quotes with escapes, so a message stays one line whatever the text holds.
std::string json_quoted(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

// The integer at `key`, or nothing when the key is absent.
std::optional<std::int64_t> optional_integer(const json& root, const char* key,
                                             const std::string& label) {
  const auto found = root.find(key);
  if (found == root.end()) return std::nullopt;
  return as_integer(*found, key, label);
}

std::int64_t required_integer(const json& root, const char* key, const std::string& label) {
  const std::optional<std::int64_t> value = optional_integer(root, key, label);
  check(value.has_value(), label, std::string("missing required key ") + key);
  return *value;
}

std::optional<std::string> optional_string(const json& root, const char* key,
                                           const std::string& label) {
  const auto found = root.find(key);
  if (found == root.end()) return std::nullopt;
  check(found->is_string(), label,
        std::string(key) + " must be a string, found " + describe(*found));
  return found->get<std::string>();
}

}  // namespace

Gpt2Config parse_gpt2_config(std::string_view json_text, const std::string& label) {
  const json root = parse_json_refusing_duplicates(json_text, label, "");
  check(root.is_object(), label, "not a JSON object");

  Gpt2Config config;
  if (const std::optional<std::string> model_type = optional_string(root, "model_type", label)) {
    config.model_type = *model_type;
  }
  config.vocab_size = required_integer(root, "vocab_size", label);

  // n_ctx is GPT-2's older name for n_positions; when both are given n_positions wins.
  const std::optional<std::int64_t> n_positions = optional_integer(root, "n_positions", label);
  const std::optional<std::int64_t> n_ctx = optional_integer(root, "n_ctx", label);
  check(n_positions.has_value() || n_ctx.has_value(), label,
        "missing required key n_positions (or n_ctx)");
  config.context_length = n_positions ? *n_positions : *n_ctx;

  config.d_model = required_integer(root, "n_embd", label);
  config.n_layers = required_integer(root, "n_layer", label);
  config.n_heads = required_integer(root, "n_head", label);
  config.n_kv_heads = config.n_heads;

  // n_inner: absent or null means 4 x n_embd, computed only once n_embd is known to be small.
  const auto n_inner = root.find("n_inner");
  if (n_inner == root.end() || n_inner->is_null()) {
    check_range(config.d_model, 1, kMaxDModel, "n_embd", label);
    config.d_ff = 4 * config.d_model;
  } else {
    config.d_ff = required_integer(root, "n_inner", label);
  }

  const auto epsilon = root.find("layer_norm_epsilon");
  if (epsilon != root.end()) {
    check(epsilon->is_number(), label,
          "layer_norm_epsilon must be a number, found " + describe(*epsilon));
    config.layer_norm_epsilon = epsilon->get<double>();
  }
  if (const std::optional<std::string> activation =
          optional_string(root, "activation_function", label)) {
    config.activation = *activation;
  }
  config.eos_token_ids = read_eos_token_ids(root, config.eos_token_ids, label);
  for (const auto& [key, destination] :
       {std::pair{"scale_attn_weights", &config.scale_attn_weights},
        std::pair{"scale_attn_by_inverse_layer_idx", &config.scale_attn_by_inverse_layer_idx}}) {
    const auto found = root.find(key);
    if (found == root.end()) continue;
    check(found->is_boolean(), label,
          std::string(key) + " must be true or false, found " + describe(*found));
    *destination = found->get<bool>();
  }
  // reorder_and_upcast_attn only changes rounding, and attnscope computes attention in f32.

  validate_gpt2_config(config, label);
  config.head_dim = config.d_model / config.n_heads;  // validated: n_head divides n_embd
  return config;
}

float Gpt2Config::attention_scale(std::int64_t layer_index) const {
  double scale = scale_attn_weights ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : 1.0;
  if (scale_attn_by_inverse_layer_idx) scale /= static_cast<double>(layer_index + 1);
  return static_cast<float>(scale);
}

Gpt2Config read_gpt2_config(const std::string& path) {
  return parse_gpt2_config(read_input_file(path, kMaxConfigBytes, "a config.json"), path);
}

void validate_gpt2_config(const Gpt2Config& config, const std::string& label) {
  check(config.model_type == "gpt2", label,
        "model_type " + json_quoted(config.model_type) + " is not supported (only \"gpt2\")");
  check_range(config.vocab_size, 1, kMaxVocabSize, "vocab_size", label);
  check_range(config.context_length, 1, kMaxContextLength, "n_positions", label);
  check_range(config.d_model, 1, kMaxDModel, "n_embd", label);
  check_range(config.n_layers, 1, kMaxLayers, "n_layer", label);
  check_range(config.n_heads, 1, kMaxHeads, "n_head", label);
  check(config.d_model % config.n_heads == 0, label,
        "n_embd = " + std::to_string(config.d_model) +
            " is not divisible by n_head = " + std::to_string(config.n_heads));
  check(config.n_kv_heads == config.n_heads, label,
        "n_kv_heads = " + std::to_string(config.n_kv_heads) +
            " must equal n_head = " + std::to_string(config.n_heads) + " for GPT-2");
  check_range(config.d_ff, 1, kMaxDFF, "n_inner", label);
  check(std::isfinite(config.layer_norm_epsilon) && config.layer_norm_epsilon > 0 &&
            config.layer_norm_epsilon < 1,
        label,
        "layer_norm_epsilon = " + format_double(config.layer_norm_epsilon) +
            " must be finite and in (0, 1)");
  for (std::string_view learned : kLearnedActivations) {
    check(config.activation != learned, label,
          "activation_function " + json_quoted(config.activation) +
              " is not supported (its learned parameters are not loaded)");
  }
  std::string valid_activations;
  for (const ActivationName& entry : kActivationNames) {
    valid_activations += (valid_activations.empty() ? "" : ", ") + std::string(entry.name);
  }
  check(find_activation(config.activation).has_value(), label,
        "activation_function " + json_quoted(config.activation) +
            " is not supported (valid: " + valid_activations + ")");
}

}  // namespace attnscope::gpt2
