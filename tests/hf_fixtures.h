// The Hugging Face parity fixtures (tests/fixtures/hf/, made by
// tools/fixtures/make_hf_fixtures.py): small random GPT-2s with the logits and greedy
// continuations transformers computed for them, shared by the CPU and the GPU model suites.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "fixture_paths.h"

namespace attnscope::testing {

// Two shapes in f32 storage, and the first again stored in bf16 and in f16; then the loading
// fixtures (issue 12): every activation name of transformers' ACT2FN, the attention-scale
// options, an eos_token_id outside the vocabulary, and a checkpoint in shards.
inline const char* const kHfFixtures[] = {"tiny-a",
                                          "tiny-b",
                                          "tiny-a-bf16",
                                          "tiny-a-f16",
                                          "act-gelu_new",
                                          "act-gelu_pytorch_tanh",
                                          "act-gelu_python_tanh",
                                          "act-gelu_fast",
                                          "act-gelu_accurate",
                                          "act-gelu",
                                          "act-gelu_python",
                                          "act-gelu_10",
                                          "act-quick_gelu",
                                          "act-laplace",
                                          "act-relu",
                                          "act-relu2",
                                          "act-relu6",
                                          "act-leaky_relu",
                                          "act-hardswish",
                                          "act-silu",
                                          "act-swish",
                                          "act-mish",
                                          "act-sqrtsoftplus",
                                          "act-sigmoid",
                                          "act-tanh",
                                          "act-linear",
                                          "scale-by-layer",
                                          "unscaled",
                                          "unscaled-by-layer",
                                          "eos-outside",
                                          "sharded"};

inline std::string hf_fixture_dir(const std::string& name) {
  return test_fixtures() + "/hf/" + name;
}

// reference.json: input_ids, logits [B][T][V], greedy {prompt_ids, generated_ids}.
inline nlohmann::json read_hf_reference(const std::string& name) {
  std::ifstream in(hf_fixture_dir(name) + "/reference.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace attnscope::testing
