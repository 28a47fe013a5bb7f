// Tests of the config.json reader: GPT-2's own config parses to the expected hyperparameters,
// defaults apply where keys are optional, and each missing, mistyped or out-of-range value is
// refused with a one-line Error naming the source and the key. Cost: milliseconds.

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "json_object_text.h"
#include "models/gpt2/config.h"
#include "runtime/error.h"
#include "safetensors_writer.h"

namespace attnscope {
namespace {

const std::string kConfigLabel = "config.json";

// GPT-2 small's config.json as Hugging Face publishes it (n_inner absent).
const char* const kGpt2ConfigJson = R"({
  "activation_function": "gelu_new",
  "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1,
  "bos_token_id": 50256,
  "embd_pdrop": 0.1,
  "eos_token_id": 50256,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt2",
  "n_ctx": 1024,
  "n_embd": 768,
  "n_head": 12,
  "n_layer": 12,
  "n_positions": 1024,
  "resid_pdrop": 0.1,
  "summary_activation": null,
  "summary_first_dropout": 0.1,
  "summary_proj_to_labels": true,
  "summary_type": "cls_index",
  "summary_use_proj": true,
  "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "vocab_size": 50257
})";

// A small valid config, to build variants of (tests/json_object_text.h).
struct ConfigText : testing::JsonObjectText {
  ConfigText()
      : JsonObjectText({{"vocab_size", "100"},
                        {"n_positions", "32"},
                        {"n_embd", "16"},
                        {"n_layer", "2"},
                        {"n_head", "4"},
                        {"eos_token_id", "99"}}) {}
};

// The message of the Error thrown by parsing, or a note that none was thrown.
std::string config_failure(const testing::JsonObjectText& config) {
  try {
    gpt2::parse_gpt2_config(config.json(), kConfigLabel);
  } catch (const Error& error) {
    return error.what();
  }
  return "(parsed without error)";
}

TEST_CASE("config: GPT-2 small's config.json") {
  const gpt2::Gpt2Config config = gpt2::parse_gpt2_config(kGpt2ConfigJson, kConfigLabel);
  CHECK(config.model_type == "gpt2");
  CHECK(config.vocab_size == 50257);
  CHECK(config.context_length == 1024);
  CHECK(config.d_model == 768);
  CHECK(config.n_layers == 12);
  CHECK(config.n_heads == 12);
  CHECK(config.n_kv_heads == 12);
  CHECK(config.d_ff == 3072);
  CHECK(config.head_dim == 64);
  CHECK(config.layer_norm_epsilon == 1e-5);
  CHECK(config.activation == "gelu_new");
  CHECK(config.eos_token_ids == std::vector<std::int64_t>{50256});
}

TEST_CASE("config: optional keys take their defaults") {
  const gpt2::Gpt2Config config = gpt2::parse_gpt2_config(
      ConfigText().erase("eos_token_id").set("vocab_size", "50257").json(), kConfigLabel);
  CHECK(config.d_ff == 64);
  CHECK(config.layer_norm_epsilon == 1e-5);
  CHECK(config.activation == "gelu_new");
  CHECK(config.model_type == "gpt2");
  CHECK(config.eos_token_ids == std::vector<std::int64_t>{50256});
}

TEST_CASE("config: n_inner given, null or absent") {
  CHECK(gpt2::parse_gpt2_config(ConfigText().set("n_inner", "24").json(), kConfigLabel).d_ff == 24);
  CHECK(gpt2::parse_gpt2_config(ConfigText().set("n_inner", "null").json(), kConfigLabel).d_ff ==
        64);
  CHECK(gpt2::parse_gpt2_config(ConfigText().json(), kConfigLabel).d_ff == 64);
}

TEST_CASE("config: n_ctx stands in for n_positions, and n_positions wins when both are given") {
  CHECK(gpt2::parse_gpt2_config(ConfigText().erase("n_positions").set("n_ctx", "48").json(),
                                kConfigLabel)
            .context_length == 48);
  CHECK(gpt2::parse_gpt2_config(ConfigText().set("n_ctx", "48").json(), kConfigLabel)
            .context_length == 32);
}

TEST_CASE("config: every activation name of transformers' ACT2FN without parameters is read") {
  for (const ActivationName& entry : kActivationNames) {
    const gpt2::Gpt2Config config = gpt2::parse_gpt2_config(
        ConfigText()
            .set("activation_function", std::string("\"").append(entry.name).append("\""))
            .json(),
        kConfigLabel);
    CHECK(config.activation == entry.name);
    CHECK(config.mlp_activation() == entry.activation);
  }
  CHECK(find_activation("gelu") == Activation::GeluExact);
  CHECK(find_activation("swish") == Activation::Silu);
  CHECK(find_activation("gelu_fast") == Activation::GeluTanh);
}

TEST_CASE("config: the attention scale follows scale_attn_weights and the layer index") {
  const gpt2::Gpt2Config plain =
      gpt2::parse_gpt2_config(ConfigText().json(), kConfigLabel);  // D = 16 / 4
  CHECK(plain.attention_scale(0) == 0.5f);
  CHECK(plain.attention_scale(3) == 0.5f);
  const gpt2::Gpt2Config unscaled =
      gpt2::parse_gpt2_config(ConfigText().set("scale_attn_weights", "false").json(), kConfigLabel);
  CHECK(unscaled.attention_scale(0) == 1.0f);
  const gpt2::Gpt2Config by_layer = gpt2::parse_gpt2_config(
      ConfigText().set("scale_attn_by_inverse_layer_idx", "true").json(), kConfigLabel);
  CHECK(by_layer.attention_scale(0) == 0.5f);
  CHECK(by_layer.attention_scale(1) == 0.25f);
  CHECK(by_layer.attention_scale(3) == 0.125f);
  const gpt2::Gpt2Config both =
      gpt2::parse_gpt2_config(ConfigText()
                                  .set("scale_attn_weights", "false")
                                  .set("scale_attn_by_inverse_layer_idx", "true")
                                  .json(),
                              kConfigLabel);
  CHECK(both.attention_scale(1) == 0.5f);
}

TEST_CASE("config: other optional values are read") {
  const gpt2::Gpt2Config config = gpt2::parse_gpt2_config(ConfigText()
                                                              .set("layer_norm_epsilon", "1e-6")
                                                              .set("eos_token_id", "0")
                                                              .set("model_type", "\"gpt2\"")
                                                              .json(),
                                                          kConfigLabel);
  CHECK(config.layer_norm_epsilon == 1e-6);
  CHECK(config.eos_token_ids == std::vector<std::int64_t>{0});
}

TEST_CASE("config: text that is not a JSON object is refused with the parser's position") {
  CHECK_THROWS_WITH_AS(gpt2::parse_gpt2_config("{\n  \"n_embd\": 768,\n}", kConfigLabel),
                       "config.json: not valid JSON: parse error at line 3, column 1: syntax "
                       "error while parsing object key - unexpected '}'; expected string literal",
                       Error);
  CHECK_THROWS_WITH_AS(gpt2::parse_gpt2_config("", kConfigLabel),
                       doctest::Contains("config.json: not valid JSON: parse error at line 1, "
                                         "column 1"),
                       Error);
  CHECK_THROWS_WITH_AS(gpt2::parse_gpt2_config(std::string_view("{}\0{", 4), kConfigLabel),
                       "config.json: not valid JSON: NUL byte at offset 2", Error);
  CHECK_THROWS_WITH_AS(gpt2::parse_gpt2_config("[1, 2]", kConfigLabel),
                       "config.json: not a JSON object", Error);
  CHECK_THROWS_WITH_AS(gpt2::parse_gpt2_config("null", kConfigLabel),
                       "config.json: not a JSON object", Error);
}

TEST_CASE("config: each required key is required") {
  CHECK(config_failure(ConfigText().erase("vocab_size")) ==
        "config.json: missing required key vocab_size");
  CHECK(config_failure(ConfigText().erase("n_embd")) == "config.json: missing required key n_embd");
  CHECK(config_failure(ConfigText().erase("n_layer")) ==
        "config.json: missing required key n_layer");
  CHECK(config_failure(ConfigText().erase("n_head")) == "config.json: missing required key n_head");
  CHECK(config_failure(ConfigText().erase("n_positions")) ==
        "config.json: missing required key n_positions (or n_ctx)");
}

TEST_CASE("config: integers must be JSON integers") {
  CHECK(config_failure(ConfigText().set("n_embd", "12.5")) ==
        "config.json: n_embd must be an integer, found 12.5");
  CHECK(config_failure(ConfigText().set("n_embd", "16.0")) ==
        "config.json: n_embd must be an integer, found 16.0");
  CHECK(config_failure(ConfigText().set("n_layer", "\"2\"")) ==
        "config.json: n_layer must be an integer, found a string");
  CHECK(config_failure(ConfigText().set("n_head", "true")) ==
        "config.json: n_head must be an integer, found true");
  CHECK(config_failure(ConfigText().set("vocab_size", "null")) ==
        "config.json: vocab_size must be an integer, found null");
  CHECK(config_failure(ConfigText().set("n_positions", "[32]")) ==
        "config.json: n_positions must be an integer, found an array");
  CHECK(config_failure(ConfigText().set("n_inner", "{}")) ==
        "config.json: n_inner must be an integer, found an object");
  CHECK(config_failure(ConfigText().set("eos_token_id", "\"50256\"")) ==
        "config.json: eos_token_id must be an integer, found a string");
  CHECK(config_failure(ConfigText().set("n_ctx", "1e3")) ==
        "config.json: n_ctx must be an integer, found 1000.0");
  CHECK(config_failure(ConfigText().set("vocab_size", "18446744073709551615")) ==
        "config.json: vocab_size = 18446744073709551615 is too large");
}

TEST_CASE("config: strings must be JSON strings") {
  CHECK(config_failure(ConfigText().set("activation_function", "1")) ==
        "config.json: activation_function must be a string, found 1");
  CHECK(config_failure(ConfigText().set("model_type", "null")) ==
        "config.json: model_type must be a string, found null");
  CHECK(config_failure(ConfigText().set("layer_norm_epsilon", "\"1e-5\"")) ==
        "config.json: layer_norm_epsilon must be a number, found a string");
}

TEST_CASE("config: negative and absurd values are refused") {
  CHECK(config_failure(ConfigText().set("n_layer", "-1")) ==
        "config.json: n_layer = -1 is outside [1, 1024]");
  CHECK(config_failure(ConfigText().set("vocab_size", "0")) ==
        "config.json: vocab_size = 0 is outside [1, 16777216]");
  CHECK(config_failure(ConfigText().set("vocab_size", "16777217")) ==
        "config.json: vocab_size = 16777217 is outside [1, 16777216]");
  CHECK(config_failure(ConfigText().set("n_positions", "1048577")) ==
        "config.json: n_positions = 1048577 is outside [1, 1048576]");
  CHECK(config_failure(ConfigText().set("n_positions", "0")) ==
        "config.json: n_positions = 0 is outside [1, 1048576]");
  CHECK(config_failure(ConfigText().set("n_embd", "65540").set("n_head", "4")) ==
        "config.json: n_embd = 65540 is outside [1, 65536]");
  CHECK(config_failure(ConfigText().set("n_embd", "0")) ==
        "config.json: n_embd = 0 is outside [1, 65536]");
  CHECK(config_failure(ConfigText().set("n_embd", "-9223372036854775808")) ==
        "config.json: n_embd = -9223372036854775808 is outside [1, 65536]");
  CHECK(config_failure(ConfigText().set("n_layer", "1025")) ==
        "config.json: n_layer = 1025 is outside [1, 1024]");
  CHECK(config_failure(ConfigText().set("n_head", "1025")) ==
        "config.json: n_head = 1025 is outside [1, 1024]");
  CHECK(config_failure(ConfigText().set("n_head", "0")) ==
        "config.json: n_head = 0 is outside [1, 1024]");
  CHECK(config_failure(ConfigText().set("n_inner", "0")) ==
        "config.json: n_inner = 0 is outside [1, 262144]");
  CHECK(config_failure(ConfigText().set("n_inner", "262145")) ==
        "config.json: n_inner = 262145 is outside [1, 262144]");
  CHECK(config_failure(ConfigText().set("n_inner", "9223372036854775807")) ==
        "config.json: n_inner = 9223372036854775807 is outside [1, 262144]");
}

TEST_CASE("config: n_embd must be divisible by n_head") {
  CHECK(config_failure(ConfigText().set("n_embd", "18")) ==
        "config.json: n_embd = 18 is not divisible by n_head = 4");
}

TEST_CASE("config: layer_norm_epsilon must be finite and in (0, 1)") {
  CHECK(config_failure(ConfigText().set("layer_norm_epsilon", "0")) ==
        "config.json: layer_norm_epsilon = 0 must be finite and in (0, 1)");
  CHECK(config_failure(ConfigText().set("layer_norm_epsilon", "-1e-5")) ==
        "config.json: layer_norm_epsilon = -1e-05 must be finite and in (0, 1)");
  CHECK(config_failure(ConfigText().set("layer_norm_epsilon", "1")) ==
        "config.json: layer_norm_epsilon = 1 must be finite and in (0, 1)");
  // JSON has no infinity; the parser refuses a literal beyond double's range.
  CHECK(config_failure(ConfigText().set("layer_norm_epsilon", "1e999")) ==
        "config.json: not valid JSON: number overflow parsing '1e999'");
}

TEST_CASE("config: activation_function and model_type must be ones attnscope implements") {
  const std::string valid =
      "(valid: gelu_new, gelu_pytorch_tanh, gelu_python_tanh, gelu_fast, gelu_accurate, gelu, "
      "gelu_python, gelu_10, quick_gelu, laplace, relu, relu2, relu6, leaky_relu, hardswish, "
      "silu, swish, mish, sqrtsoftplus, sigmoid, tanh, linear)";
  CHECK(config_failure(ConfigText().set("activation_function", "\"gelu\\nnew\"")) ==
        "config.json: activation_function \"gelu\\nnew\" is not supported " + valid);
  CHECK(config_failure(ConfigText().set("activation_function", "\"Relu\"")) ==
        "config.json: activation_function \"Relu\" is not supported " + valid);
  CHECK(config_failure(ConfigText().set("activation_function", "\"prelu\"")) ==
        "config.json: activation_function \"prelu\" is not supported (its learned parameters "
        "are not loaded)");
  CHECK(config_failure(ConfigText().set("scale_attn_weights", "1")) ==
        "config.json: scale_attn_weights must be true or false, found 1");
  CHECK(config_failure(ConfigText().set("scale_attn_by_inverse_layer_idx", "null")) ==
        "config.json: scale_attn_by_inverse_layer_idx must be true or false, found null");
  CHECK(config_failure(ConfigText().set("model_type", "\"llama\"")) ==
        "config.json: model_type \"llama\" is not supported (only \"gpt2\")");
}

TEST_CASE("config: eos_token_id is one id, a list of them or null, as in every family") {
  CHECK(gpt2::parse_gpt2_config(ConfigText().set("eos_token_id", "[7, 99]").json(), kConfigLabel)
            .eos_token_ids == std::vector<std::int64_t>{7, 99});
  CHECK(gpt2::parse_gpt2_config(ConfigText().set("eos_token_id", "null").json(), kConfigLabel)
            .eos_token_ids.empty());
  CHECK(gpt2::parse_gpt2_config(ConfigText().set("eos_token_id", "[]").json(), kConfigLabel)
            .eos_token_ids.empty());
  CHECK(config_failure(ConfigText().set("eos_token_id", "[7, \"8\"]")) ==
        "config.json: eos_token_id must be an integer, found a string");
}

TEST_CASE("config: an eos_token_id outside the vocabulary is kept, as transformers keeps it") {
  for (const char* eos : {"100", "-1"}) {
    const gpt2::Gpt2Config config =
        gpt2::parse_gpt2_config(ConfigText().set("eos_token_id", eos).json(), kConfigLabel);
    CHECK_FALSE(config.eos_in_vocabulary());
  }
  // The default, 50256, is GPT-2's <|endoftext|>: outside a small vocabulary.
  const gpt2::Gpt2Config fallback =
      gpt2::parse_gpt2_config(ConfigText().erase("eos_token_id").json(), kConfigLabel);
  CHECK(fallback.eos_token_ids == std::vector<std::int64_t>{50256});
  CHECK_FALSE(fallback.eos_in_vocabulary());
  CHECK(gpt2::parse_gpt2_config(ConfigText().set("eos_token_id", "99").json(), kConfigLabel)
            .eos_in_vocabulary());
}

TEST_CASE("config: gpt2::read_gpt2_config reads a file and names it in errors") {
  const testing::TempDir dir;
  const std::string path = dir.file("config.json");
  testing::write_file(path, kGpt2ConfigJson);
  CHECK(gpt2::read_gpt2_config(path).d_model == 768);

  const std::string broken = dir.file("broken.json");
  testing::write_file(broken, ConfigText().set("n_layer", "0").json());
  CHECK_THROWS_WITH_AS(gpt2::read_gpt2_config(broken),
                       (broken + ": n_layer = 0 is outside [1, 1024]").c_str(), Error);

  const std::string empty = dir.file("empty.json");
  testing::write_file(empty, "");
  CHECK_THROWS_WITH_AS(
      gpt2::read_gpt2_config(empty),
      doctest::Contains((empty + ": not valid JSON: parse error at line 1").c_str()), Error);

  CHECK_THROWS_WITH_AS(gpt2::read_gpt2_config(dir.file("absent.json")),
                       (dir.file("absent.json") + ": no such file").c_str(), Error);
  CHECK_THROWS_WITH_AS(gpt2::read_gpt2_config(dir.path().string()),
                       (dir.path().string() + ": not a regular file").c_str(), Error);
}

TEST_CASE("config: gpt2::validate_gpt2_config checks configs built in code") {
  gpt2::Gpt2Config config;
  config.vocab_size = 64;
  config.context_length = 16;
  config.d_model = 8;
  config.n_layers = 1;
  config.n_heads = 2;
  config.n_kv_heads = 2;
  config.d_ff = 32;
  config.eos_token_ids = {0};
  CHECK_NOTHROW(gpt2::validate_gpt2_config(config, "synthetic"));

  config.n_kv_heads = 1;
  CHECK_THROWS_WITH_AS(gpt2::validate_gpt2_config(config, "synthetic"),
                       "synthetic: n_kv_heads = 1 must equal n_head = 2 for GPT-2", Error);
  config.n_kv_heads = 2;
  config.activation = "swiglu";
  CHECK_THROWS_WITH_AS(gpt2::validate_gpt2_config(config, "synthetic"),
                       doctest::Contains("activation_function \"swiglu\" is not supported"), Error);
  config.activation = "gelu_pytorch_tanh";
  config.d_ff = 0;
  CHECK_THROWS_WITH_AS(gpt2::validate_gpt2_config(config, "synthetic"),
                       "synthetic: n_inner = 0 is outside [1, 262144]", Error);
}

}  // namespace
}  // namespace attnscope
