// The Hugging Face Llama parity fixtures (tests/fixtures/hf-llama/, made by
// tools/fixtures/make_hf_llama_fixtures.py) and the bound their logits are compared within,
// shared by the CPU and the GPU Llama suites.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "fixture_paths.h"
#include "models/llama/config.h"

namespace attnscope::testing {

// wide-heads has heads of width 16 (head_dim set, not hidden_size / heads = 8); its -bf16 and
// -f16 variants hold its weights rounded to those dtypes (stored narrow), with transformers'
// f32 logits of the rounded weights. tied-config-own-head's config.json ties the LM head to the
// embedding, yet its checkpoint stores a different lm_head.weight: transformers keeps the stored
// head, and so must attnscope. qwen2-biased is a Qwen2ForCausalLM: biases on q, k and v;
// qwen3-qk-norm a Qwen3ForCausalLM: an RMSNorm on each q and k head.
inline const char* const kLlamaFixtures[] = {
    "gqa-tied-llama3",     "mha-untied",   "tied-config-own-head",
    "gqa1-untied-sharded", "wide-heads",   "wide-heads-bf16",
    "wide-heads-f16",      "qwen2-biased", "qwen3-qk-norm"};

inline std::string fixture_dir(const std::string& name) {
  return testing::test_fixtures() + "/hf-llama/" + name;
}

inline nlohmann::json read_reference(const std::string& name) {
  std::ifstream in(fixture_dir(name) + "/reference.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The bound on |ours - transformers'| / max(|transformers'|, 1) for one logit. Both compute in
// f32 from the same f32 weights; they differ in the order of additions inside each reduction
// (and by an ulp in expf / rsqrt). A length-K f32 sum in any order is within (K - 1) u of the
// sum of its terms' magnitudes (u = 2^-24), so two orders differ by at most 2 K u of it. A
// logit sits at the end of a chain of R = 9 L + 2 reductions (per layer: RMSNorm, the qkv
// projection, scores, softmax, P V, o_proj, RMSNorm, gate_up, down, and with Qwen3's head norms
// two more; then the final norm and the head), each at most K = max(C, F, Hq D, T) long. With the
// fixtures' weights the terms' magnitudes stay at the scale of max(|logit|, 1) along the chain
// (RMSNorm re-normalises every block's input), and first-order errors add along it: bound = R 2 K
// u.
inline double logit_bound(const llama::LlamaConfig& config, std::int64_t tokens) {
  const double u = 0x1.0p-24;
  const auto reductions =
      static_cast<double>((config.qk_norm ? 11 : 9) * config.num_hidden_layers + 2);
  const auto longest =
      static_cast<double>(std::max({config.hidden_size, config.intermediate_size,
                                    config.num_attention_heads * config.head_dim, tokens}));
  return reductions * 2.0 * longest * u;
}

}  // namespace attnscope::testing
