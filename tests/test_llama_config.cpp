// Tests of the Llama config.json reader: SmolLM2's and Llama 3.2's configs (as transformers
// writes them) parse to their hyperparameters, defaults apply where keys are optional, and
// unsupported or broken values are refused with a one-line Error naming the key.
// Cost: milliseconds.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "json_object_text.h"
#include "models/llama/config.h"
#include "models/llama/weights.h"
#include "runtime/error.h"

namespace attnscope {
namespace {

const std::string kLabel = "config.json";

// SmolLM2-135M's config.json (GQA 9 / 3, tied embeddings, no rope_scaling).
const char* const kSmolLm2Json = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 0,
  "eos_token_id": 0,
  "hidden_act": "silu",
  "hidden_size": 576,
  "initializer_range": 0.041666666666666664,
  "intermediate_size": 1536,
  "is_llama_config": true,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 9,
  "num_hidden_layers": 30,
  "num_key_value_heads": 3,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_interleaved": false,
  "rope_scaling": null,
  "rope_theta": 100000,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.42.3",
  "use_cache": true,
  "vocab_size": 49152
})";

// Llama 3.2 1B's config.json (llama3 rope scaling, explicit head_dim, GQA 32 / 8).
const char* const kLlama32Json = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 128256
})";

// Qwen2.5-0.5B-Instruct's config.json, as published.
const char* const kQwen25Json = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 21,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// Qwen3-0.6B's config.json, as published.
const char* const kQwen3Json = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

// A small valid config, to build variants of (tests/json_object_text.h).
struct ConfigText : testing::JsonObjectText {
  ConfigText()
      : JsonObjectText({{"vocab_size", "100"},
                        {"hidden_size", "32"},
                        {"intermediate_size", "64"},
                        {"num_hidden_layers", "2"},
                        {"num_attention_heads", "4"},
                        {"num_key_value_heads", "2"},
                        {"model_type", "\"llama\""}}) {}
};

// The message of the Error thrown by parsing, or a note that none was thrown.
std::string failure(const testing::JsonObjectText& config) {
  try {
    llama::parse_llama_config(config.json(), kLabel);
  } catch (const Error& error) {
    return error.what();
  }
  return "(parsed without error)";
}

const char* const kLlama3Scaling =
    R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192})";

}  // namespace

TEST_CASE("llama config: SmolLM2-135M's config.json") {
  const llama::LlamaConfig config = llama::parse_llama_config(kSmolLm2Json, kLabel);
  CHECK(config.vocab_size == 49152);
  CHECK(config.hidden_size == 576);
  CHECK(config.intermediate_size == 1536);
  CHECK(config.num_hidden_layers == 30);
  CHECK(config.num_attention_heads == 9);
  CHECK(config.num_key_value_heads == 3);
  CHECK(config.group_size() == 3);
  CHECK(config.head_dim == 64);
  CHECK(config.rms_norm_eps == 1e-5);
  CHECK(config.rope_theta == 100000.0);
  CHECK_FALSE(config.rope_scaling.has_value());
  CHECK(config.max_position_embeddings == 8192);
  CHECK(config.tie_word_embeddings);
  CHECK(config.bos_token_id == 0);
  CHECK(config.eos_token_ids == std::vector<std::int64_t>{0});
}

TEST_CASE("llama config: Qwen2.5-0.5B-Instruct's config.json, and Qwen2's defaults") {
  const llama::LlamaConfig config = llama::parse_llama_config(kQwen25Json, kLabel);
  CHECK(config.model_type == "qwen2");
  CHECK(config.qkv_bias);
  CHECK(config.num_attention_heads == 14);
  CHECK(config.group_size() == 7);
  CHECK(config.head_dim == 64);
  CHECK(config.rope_theta == 1e6);
  CHECK_FALSE(config.sliding_window.has_value());  // use_sliding_window false
  CHECK(config.context_length() == 32768);
  CHECK(config.tie_word_embeddings);
  CHECK(config.bos_token_id == 151643);
  CHECK(config.eos_token_ids == std::vector<std::int64_t>{151645});
  CHECK(llama::count_parameters(config) == 494032768);  // Hugging Face's count
  // Qwen2Config's defaults where they differ from LlamaConfig's; Llama has no biases.
  const llama::LlamaConfig bare =
      llama::parse_llama_config(ConfigText().set("model_type", "\"qwen2\"").json(), kLabel);
  CHECK(bare.max_position_embeddings == 32768);
  CHECK_FALSE(bare.bos_token_id.has_value());
  CHECK(bare.eos_token_ids.empty());
  CHECK_FALSE(llama::parse_llama_config(ConfigText().json(), kLabel).qkv_bias);
}

TEST_CASE("llama config: Qwen3-0.6B's config.json, and Qwen3's defaults") {
  const llama::LlamaConfig config = llama::parse_llama_config(kQwen3Json, kLabel);
  CHECK(config.model_type == "qwen3");
  CHECK(config.qk_norm);
  CHECK_FALSE(config.qkv_bias);
  CHECK(config.head_dim == 128);  // set, and not hidden_size / heads = 64
  CHECK(config.group_size() == 2);
  CHECK(config.rope_theta == 1e6);
  CHECK(config.context_length() == 40960);
  CHECK(config.eos_token_ids == std::vector<std::int64_t>{151645});
  CHECK(llama::count_parameters(config) == 596049920);  // 0.44B without the embedding
  // Qwen3Config's defaults: head_dim 128 whatever the width, no bos or eos; attention_bias
  // (biases on all four projections) is refused as for Llama.
  const llama::LlamaConfig bare =
      llama::parse_llama_config(ConfigText().set("model_type", "\"qwen3\"").json(), kLabel);
  CHECK(bare.head_dim == 128);
  CHECK(bare.max_position_embeddings == 32768);
  CHECK_FALSE(bare.bos_token_id.has_value());
  CHECK(failure(ConfigText().set("model_type", "\"qwen3\"").set("attention_bias", "true")) ==
        "config.json: attention_bias = true is not supported (biases on every projection)");
  CHECK_FALSE(llama::parse_llama_config(ConfigText().json(), kLabel).qk_norm);
}

TEST_CASE("llama config: Llama 3.2 1B's config.json with llama3 rope scaling") {
  const llama::LlamaConfig config = llama::parse_llama_config(kLlama32Json, kLabel);
  CHECK(config.head_dim == 64);
  CHECK(config.group_size() == 4);
  CHECK(config.rope_theta == 500000.0);
  REQUIRE(config.rope_scaling.has_value());
  CHECK(config.rope_scaling->factor == 32.0);
  CHECK(config.rope_scaling->low_freq_factor == 1.0);
  CHECK(config.rope_scaling->high_freq_factor == 4.0);
  CHECK(config.rope_scaling->original_max_position_embeddings == 8192);
  CHECK(config.max_position_embeddings == 131072);
  CHECK(config.bos_token_id == 128000);
  CHECK(config.eos_token_ids == std::vector<std::int64_t>{128001});
}

TEST_CASE("llama config: defaults, eos lists, the older 'type' key and rope_type default") {
  const llama::LlamaConfig config =
      llama::parse_llama_config(ConfigText().erase("num_key_value_heads").json(), kLabel);
  CHECK(config.num_key_value_heads == 4);  // multi-head attention
  CHECK(config.head_dim == 8);             // 32 / 4
  CHECK(config.rms_norm_eps == 1e-6);
  CHECK(config.rope_theta == 10000.0);
  CHECK(config.max_position_embeddings == 2048);
  CHECK_FALSE(config.tie_word_embeddings);
  CHECK(config.bos_token_id == 1);
  CHECK(config.eos_token_ids == std::vector<std::int64_t>{2});

  const llama::LlamaConfig listed = llama::parse_llama_config(
      ConfigText().set("eos_token_id", "[7, 8, 9]").set("bos_token_id", "null").json(), kLabel);
  CHECK(listed.eos_token_ids == std::vector<std::int64_t>{7, 8, 9});
  CHECK_FALSE(listed.bos_token_id.has_value());

  const llama::LlamaConfig old_key = llama::parse_llama_config(
      ConfigText()
          .set("rope_scaling", R"({"type": "llama3", "factor": 8, "low_freq_factor": 1,
                                   "high_freq_factor": 4, "original_max_position_embeddings": 64})")
          .json(),
      kLabel);
  REQUIRE(old_key.rope_scaling.has_value());
  CHECK(old_key.rope_scaling->original_max_position_embeddings == 64);
  CHECK_FALSE(llama::parse_llama_config(
                  ConfigText().set("rope_scaling", R"({"rope_type": "default"})").json(), kLabel)
                  .rope_scaling.has_value());
  CHECK(llama::parse_llama_config(ConfigText().set("rope_scaling", kLlama3Scaling).json(), kLabel)
            .rope_scaling.has_value());
  // A sliding window that is switched off is no sliding window; one in use shortens the context
  // to it (Mistral 7B v0.1: 4096 keys of 32768 positions), never lengthens it.
  const llama::LlamaConfig off = llama::parse_llama_config(
      ConfigText().set("sliding_window", "4096").set("use_sliding_window", "false").json(), kLabel);
  CHECK_FALSE(off.sliding_window.has_value());
  CHECK(off.context_length() == off.max_position_embeddings);
  const llama::LlamaConfig mistral =
      llama::parse_llama_config(ConfigText()
                                    .set("model_type", "\"mistral\"")
                                    .set("max_position_embeddings", "32768")
                                    .set("sliding_window", "4096")
                                    .json(),
                                kLabel);
  CHECK(mistral.model_type == "mistral");
  CHECK(mistral.context_length() == 4096);
  CHECK(
      llama::parse_llama_config(
          ConfigText().set("sliding_window", "1000000").set("max_position_embeddings", "64").json(),
          kLabel)
          .context_length() == 64);
  CHECK(llama::parse_llama_config(ConfigText().set("sliding_window", "null").json(), kLabel)
            .context_length() ==
        llama::parse_llama_config(ConfigText().json(), kLabel).max_position_embeddings);
}

TEST_CASE("llama config: transformers 5's rope_parameters (theta and scaling in one object)") {
  const llama::LlamaConfig config = llama::parse_llama_config(
      ConfigText()
          .set("rope_parameters", R"({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32,
                                      "low_freq_factor": 1, "high_freq_factor": 4,
                                      "original_max_position_embeddings": 8192})")
          .json(),
      kLabel);
  CHECK(config.rope_theta == 500000.0);
  REQUIRE(config.rope_scaling.has_value());
  CHECK(config.rope_scaling->factor == 32.0);
  const llama::LlamaConfig plain = llama::parse_llama_config(
      ConfigText().set("rope_parameters", R"({"rope_type": "default", "rope_theta": 1e5})").json(),
      kLabel);
  CHECK(plain.rope_theta == 100000.0);
  CHECK_FALSE(plain.rope_scaling.has_value());
  CHECK(failure(ConfigText().set("rope_parameters", R"({"rope_type": "yarn", "factor": 4.0})")) ==
        std::string(kLabel) +
            ": rope_parameters type 'yarn' is not supported (only 'llama3', or none)");
  // Beside it, an older rope_scaling must say the same (transformers would apply it).
  const std::string llama3 = R"({"rope_type": "llama3", "factor": 32, "low_freq_factor": 1,
                                 "high_freq_factor": 4, "original_max_position_embeddings": 8192})";
  CHECK(llama::parse_llama_config(
            ConfigText().set("rope_parameters", llama3).set("rope_scaling", llama3).json(), kLabel)
            .rope_scaling->factor == 32.0);
  CHECK(failure(ConfigText()
                    .set("rope_parameters", R"({"rope_type": "default", "rope_theta": 1e4})")
                    .set("rope_scaling", R"({"type": "linear", "factor": 2.0})")) ==
        std::string(kLabel) +
            ": rope_scaling type 'linear' is not supported (only 'llama3', or none)");
  CHECK(failure(ConfigText()
                    .set("rope_parameters", R"({"rope_type": "default", "rope_theta": 1e4})")
                    .set("rope_scaling", llama3)) ==
        std::string(kLabel) + ": rope_scaling and rope_parameters disagree on the RoPE scaling");
}

TEST_CASE("llama config: unsupported features are refused with one clear line") {
  CHECK(failure(ConfigText().set("rope_scaling", R"({"rope_type": "yarn", "factor": 4.0})")) ==
        "config.json: rope_scaling type 'yarn' is not supported (only 'llama3', or none)");
  CHECK(failure(ConfigText().set("rope_scaling", R"({"type": "linear", "factor": 2.0})")) ==
        "config.json: rope_scaling type 'linear' is not supported (only 'llama3', or none)");
  CHECK(failure(ConfigText().set("attention_bias", "true")) ==
        "config.json: attention_bias = true is not supported (biases on every projection)");
  CHECK(failure(ConfigText().set("mlp_bias", "true")) ==
        "config.json: mlp_bias = true is not supported (biases on every projection)");
  CHECK(failure(ConfigText().set("sliding_window", "0")).find("sliding_window") !=
        std::string::npos);
  CHECK(failure(ConfigText().set("sliding_window", "4096.5")).find("sliding_window") !=
        std::string::npos);
  CHECK(failure(ConfigText().set("model_type", "\"gemma\"")) ==
        "config.json: model_type 'gemma' is not supported here (only 'llama', 'mistral', 'qwen2' "
        "and 'qwen3')");
  CHECK(failure(ConfigText().set("hidden_act", "\"gelu\"")).find("hidden_act 'gelu'") !=
        std::string::npos);
}

TEST_CASE("llama config: missing, mistyped and out-of-range values are refused") {
  CHECK(failure(ConfigText().erase("hidden_size")) ==
        "config.json: missing required key hidden_size");
  CHECK(failure(ConfigText().set("num_hidden_layers", "2.5")) ==
        "config.json: num_hidden_layers must be an integer, found 2.5");
  CHECK(failure(ConfigText().set("rms_norm_eps", "\"1e-5\"")) ==
        "config.json: rms_norm_eps must be a number, found a string");
  CHECK(failure(ConfigText().set("tie_word_embeddings", "1")) ==
        "config.json: tie_word_embeddings must be true or false, found 1");
  CHECK(failure(ConfigText().set("num_key_value_heads", "3")) ==
        "config.json: num_attention_heads = 4 is not a multiple of num_key_value_heads = 3");
  CHECK(failure(ConfigText().set("num_key_value_heads", "8")) ==
        "config.json: num_key_value_heads = 8 is outside [1, 4]");
  CHECK(failure(ConfigText().set("head_dim", "7")) ==
        "config.json: head_dim = 7 must be even (rotary pairs)");
  CHECK(failure(ConfigText().set("num_attention_heads", "0")) ==
        "config.json: num_attention_heads = 0 is outside [1, 1024]");
  CHECK(failure(ConfigText().set("eos_token_id", "[1, 100]")) ==
        "config.json: eos_token_id = 100 is outside [0, 99]");
  CHECK(failure(ConfigText().set("rms_norm_eps", "0")) ==
        "config.json: rms_norm_eps = 0 must be in (0, 1)");
  CHECK(failure(ConfigText().set("rope_scaling", R"({"rope_type": "llama3", "factor": 8.0})")) ==
        "config.json: rope_scaling (llama3) is missing low_freq_factor");
  CHECK(failure(ConfigText().set("rope_scaling",
                                 R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                "high_freq_factor": 1.0, "original_max_position_embeddings": 8192})")) ==
        "config.json: rope_scaling needs 0 < low_freq_factor < high_freq_factor, got 4 and 1");
  CHECK(failure(ConfigText().set("rope_scaling", "3")) ==
        "config.json: rope_scaling must be an object or null, found 3");
  CHECK(failure(ConfigText().set("vocab_size", "100, \"vocab_size\": 200"))
            .find("duplicate key 'vocab_size'") != std::string::npos);
  CHECK(failure(ConfigText().set("vocab_size", "[")).find("not valid JSON") != std::string::npos);
}

TEST_CASE("llama config: read from a file, and a missing file named") {
  CHECK_THROWS_WITH_AS(llama::read_llama_config("/nonexistent/config.json"),
                       doctest::Contains("no such file"), Error);
}

}  // namespace attnscope
