// GPT-2: the decoder-only transformer of Radford et al. (2019), as Hugging Face lays it out.
//
// For tokens x_1..x_T at positions p_1..p_T (after the cache's length):
//   h = wte[x] + wpe[p]
//   for each of L layers (pre-norm blocks):
//     h = h + W_o · attention(LN_1(h))              causal, H heads of width D = C / H, scores
//                                                   scaled by 1 / sqrt(D) (config: per layer)
//     h = h + W_down · act(W_up · LN_2(h))          F = 4 C hidden units, act = gelu_new
//                                                   (config: any of ops/activation.h)
//   logits = LN_f(h) · wte^T                        the LM head is tied to the embedding
//
// Cost per token: about 2 (12 L C^2 + V C) FLOPs in the projections (0.25 GFLOP for the 124M
// model) plus attention, 4 L C Tk FLOPs against Tk cached tokens; a decode step reads every
// weight once (~0.5 GB in f32 for 124M), so batch-1 decode is bound by memory bandwidth and
// prefill by GEMM throughput.
#pragma once

#include <cstdint>
#include <string>

#include "models/gpt2/config.h"
#include "models/gpt2/weights.h"
#include "models/language_model.h"
#include "runtime/context.h"
#include "runtime/kv_cache.h"

namespace attnscope::gpt2 {

// GPT-2 as a LanguageModel: the shared forward step (forward, run_step in models/language_model.h)
// calls the tables and blocks below, the part of the step that is GPT-2's own.
class Model : public LanguageModel {
 public:
  // Loads `spec` (see load_checkpoint in models/gpt2/weights.h: "synthetic:NAME" or a
  // directory with config.json and model.safetensors) onto ctx's device in `dtype`.
  // Throws Error on any problem.
  static Model open(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed = 0,
                    DType dtype = DType::F32);

  const ModelConfig& config() const override { return config_; }
  const Weights& weights() const { return weights_; }
  std::int64_t parameter_count() const override;
  std::int64_t projection_weights() const override;

 private:
  Model(const std::string& spec, Checkpoint checkpoint);

  StepTables step_tables() const override {
    return {weights_.token_embedding, weights_.position_embedding, weights_.lm_head};
  }
  std::uint64_t bytes_without_lm_head() const override;
  void attention_block(Context& ctx, std::int64_t layer_index, Tensor& hidden,
                       const StepKv& kv) const override;
  void mlp_block(Context& ctx, std::int64_t layer_index, Tensor& hidden) const override;
  void final_norm(Context& ctx, const Tensor& hidden, Tensor& normed) const override;

  Gpt2Config config_;
  Weights weights_;
};

}  // namespace attnscope::gpt2
