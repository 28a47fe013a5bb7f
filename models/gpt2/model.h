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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/gpt2/step_runner.h"
#include "models/gpt2/weights.h"
#include "models/language_model.h"
#include "ops/attention/registry.h"
#include "runtime/config.h"
#include "runtime/context.h"
#include "runtime/kv_cache.h"

namespace attnscope::gpt2 {

class Model : public LanguageModel {
 public:
  // Loads `spec` (see load_checkpoint in models/gpt2/weights.h: "synthetic:NAME" or a
  // directory with config.json and model.safetensors) onto ctx's device in `dtype`.
  // Throws Error on any problem.
  static Model open(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed = 0,
                    DType dtype = DType::F32);

  const ModelConfig& config() const override { return config_; }
  // The storage dtype of the matrices (linear weights and the tied embedding / LM head): the
  // --dtype asked for, on any device.
  DType weight_dtype() const override { return dtypes_.weights; }
  // The storage dtype of activations, the other parameters and the KV cache: the weight dtype on
  // cuda, f32 on the cpu (ModelDTypes in models/gpt2/weights.h). Logits are always f32.
  DType activation_dtype() const override { return dtypes_.activations; }
  // Bytes of all parameters as stored (the tied LM head counted once): what a decode step reads.
  std::uint64_t weight_bytes() const override;
  const std::string& source() const override { return source_; }
  const Weights& weights() const { return weights_; }
  // The tensors as stored in the checkpoint (for `inspect`).
  const std::vector<StoredTensor>& stored_tensors() const override { return stored_; }
  std::int64_t parameter_count() const override;
  std::int64_t projection_weights() const override;

  // Chooses the attention backend by name (see ops/attention); throws Error for unknown names.
  void set_attention(std::string_view name) override;
  const ops::attention::Backend& attention() const override { return *attention_; }

  // A cache for `batch` sequences of up to `capacity` tokens (at most the context length).
  KVCache new_cache(Context& ctx, std::int64_t batch, std::int64_t capacity) const override;

  // Runs `tokens` (batch rows of T = tokens.size() / batch ids, row-major) at the positions
  // following the cache's contents, and appends their keys and values to the cache.
  // Returns f32 logits [batch, T, V] when all_positions, else [batch, 1, V] for the last token,
  // on ctx's device (use to_host() to read them on the host), launched by `runner`, which may
  // replay a GPU decode step as one CUDA graph (LanguageModel's forward without a runner launches
  // every kernel eagerly). Throws Error for out-of-range ids or when the cache or the context
  // would overflow.
  using LanguageModel::forward;
  Tensor forward(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t batch,
                 KVCache& cache, StepRunner& runner, bool all_positions = false) const override;

 private:
  void attention_block(Context& ctx, const LayerWeights& layer, std::int64_t layer_index,
                       Tensor& hidden, std::int64_t batch, std::int64_t tokens,
                       KVCache& cache) const;
  void mlp_block(Context& ctx, const LayerWeights& layer, Tensor& hidden) const;

  // Everything of forward() that runs on the device: embedding, layers, LM head.
  Tensor run_step(Context& ctx, const StepInputs& inputs, std::int64_t batch, std::int64_t length,
                  KVCache& cache, bool all_positions) const;

  ModelConfig config_;
  ModelDTypes dtypes_;
  std::string source_;
  Weights weights_;
  std::vector<StoredTensor> stored_;
  const ops::attention::Backend* attention_ = nullptr;
};

}  // namespace attnscope::gpt2
