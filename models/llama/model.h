// Llama (Touvron et al. 2023; Llama 3, SmolLM2, TinyLlama): Hugging Face's LlamaForCausalLM,
// and the families that are Llama's blocks: Mistral (models/llama/config.h: its window), Qwen2
// (biases on q, k and v) and Qwen3 (an RMSNorm on each q and k head).
//
// For tokens x_1..x_T at positions p_1..p_T (after the cache's length):
//   h = embed[x]                                    no learned positions
//   for each of L layers (pre-norm blocks):
//     a = rms_1(h)                                  RMSNorm (ops/rms_norm.h), gain, no bias
//     q, k, v = W_qkv · a (+ b_qkv in Qwen2)        Hq query heads, Hkv <= Hq key/value heads of
//                                                   width D (grouped-query attention: query head
//                                                   h reads key/value head h / (Hq / Hkv))
//     q, k = rms_q(q), rms_k(k)  (Qwen3)           each head an RMSNorm over its D values
//                                                   (ops/head_rms_norm.h)
//     q, k = rope(q, p), rope(k, p)                 rotary embedding (ops/rotary_embedding.h),
//                                                   k rotated once as it enters the cache
//     h = h + W_o · attention(q, K, V)              causal, scores scaled by 1 / sqrt(D)
//     h = h + W_down · (silu(W_gate · rms_2(h)) * (W_up · rms_2(h)))        SwiGLU, F units
//   logits = rms_f(h) · W_head^T                    W_head = embed when tied
// No other projection has a bias.
//
// Cost per token: about 2 L (C (Hq + 2 Hkv) D + Hq D C + 3 C F) + 2 V C FLOPs in the
// projections (0.27 GFLOP for SmolLM2-135M, 2.5 for Llama 3.2 1B), plus attention, 4 L Hq D Tk
// FLOPs against Tk cached tokens, which reads 2 L Hkv D Tk cached elements: grouped-query
// attention divides the KV cache and its traffic by Hq / Hkv (3 in SmolLM2-135M, 4 in Llama
// 3.2 1B). A decode step reads every weight once (0.54 GB in f32 for SmolLM2-135M), so batch-1
// decode is bound by memory bandwidth and prefill by GEMM throughput.
//
// The model derives from LanguageModel (models/language_model.h), as GPT-2's model does, so that
// every tool runs either family; the one forward step, its runner and its inputs are shared.
#pragma once

#include <cstdint>
#include <string>

#include "models/language_model.h"
#include "models/llama/weights.h"
#include "ops/rotary_embedding.h"
#include "runtime/context.h"
#include "runtime/kv_cache.h"

namespace attnscope::llama {

// Llama as a LanguageModel: the shared forward step (forward, run_step in models/language_model.h)
// calls the tables and blocks below, the part of the step that is Llama's own.
class Model : public LanguageModel {
 public:
  // Loads `spec` (load_checkpoint in models/llama/weights.h) onto ctx's device in `dtype`.
  // Throws Error on any problem.
  static Model open(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed = 0,
                    DType dtype = DType::F32);

  const LlamaConfig& llama_config() const { return config_; }
  // The summary the tools size things from: model_type "llama", "mistral", "qwen2" or "qwen3",
  // context_length = LlamaConfig::context_length(), d_ff = intermediate_size, eos_token_ids every
  // eos id.
  const ModelConfig& config() const override { return summary_; }
  const Weights& weights() const { return weights_; }
  std::int64_t parameter_count() const override { return count_parameters(config_); }
  std::int64_t projection_weights() const override;

 private:
  // Llama has no learned positions: its blocks rotate q and k from the cache length.
  Model(const std::string& spec, Checkpoint checkpoint, Context& ctx);

  StepTables step_tables() const override {
    return {weights_.token_embedding, Tensor(), weights_.lm_head};  // no learned positions
  }
  std::uint64_t bytes_without_lm_head() const override;
  void attention_block(Context& ctx, std::int64_t layer_index, Tensor& hidden,
                       const StepKv& kv) const override;
  void mlp_block(Context& ctx, std::int64_t layer_index, Tensor& hidden) const override;
  void final_norm(Context& ctx, const Tensor& hidden, Tensor& normed) const override;

  LlamaConfig config_;
  ModelConfig summary_;
  Weights weights_;
  ops::RotaryTable rotary_;  // cos and sin for every position, f32 on the device
};

}  // namespace attnscope::llama
