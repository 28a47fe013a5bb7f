// LanguageModel: what every tool needs from a model, whichever family it is.
//
// attnscope runs two families, GPT-2 (models/gpt2/) and Llama (models/llama/). Each keeps its own
// weights, config and forward recipe, because those are what a reader studies; the tools
// (generate, bench, perplexity, profile, compare, inspect) only open a model, size a KV cache,
// choose an attention backend and step it forward. That shared surface is this abstract class,
// and open_model() picks the family from the spec. An interface was chosen over a family switch
// inside one Model type: each model file stays readable on its own, and adding a family means
// one class and one line in open_model(). A virtual call per forward step costs nothing beside
// the step.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/gpt2/step_runner.h"
#include "models/gpt2/weights.h"
#include "ops/attention/registry.h"
#include "runtime/config.h"
#include "runtime/context.h"
#include "runtime/kv_cache.h"

namespace attnscope {

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;

  // The shape the tools size things from (vocabulary, context length, layers, heads, eos).
  // GPT-2's own config; for Llama a summary of its LlamaConfig (model_type "llama").
  virtual const ModelConfig& config() const = 0;
  // The storage dtype of the matrices, and of activations and the KV cache (gpt2::ModelDTypes).
  virtual DType weight_dtype() const = 0;
  virtual DType activation_dtype() const = 0;
  // Bytes of all parameters as stored (a tied LM head counted once): what a decode step reads.
  virtual std::uint64_t weight_bytes() const = 0;
  virtual const std::string& source() const = 0;
  // The tensors as the checkpoint stores them (for `inspect`).
  virtual const std::vector<gpt2::StoredTensor>& stored_tensors() const = 0;
  virtual std::int64_t parameter_count() const = 0;
  // The elements of the layers' projection matrices (attention's q, k, v and output, the MLP's;
  // not the embedding, not the LM head). A token multiplies each once (a multiply and an add),
  // so a step over T tokens spends 2 T x this FLOPs in them. Counted from the matrices the model
  // holds rather than re-derived from the config by a formula in each tool, so the cost models
  // (profile, compare) follow whatever the family has: GQA's narrower K and V projections,
  // SwiGLU's third matrix, a head_dim other than d_model / n_heads.
  virtual std::int64_t projection_weights() const = 0;

  // Chooses the attention backend by name (see ops/attention); throws Error for unknown names.
  virtual void set_attention(std::string_view name) = 0;
  virtual const ops::attention::Backend& attention() const = 0;

  // A cache for `batch` sequences of up to `capacity` tokens (at most the context length).
  virtual KVCache new_cache(Context& ctx, std::int64_t batch, std::int64_t capacity) const = 0;
  // Runs `tokens` (batch rows of equal length) after the cache's contents and appends their keys
  // and values; f32 logits [batch, T, V] when all_positions, else [batch, 1, V] (see
  // gpt2::Model::forward). The runner may replay a GPU decode step as one CUDA graph.
  virtual Tensor forward(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t batch,
                         KVCache& cache, gpt2::StepRunner& runner,
                         bool all_positions = false) const = 0;
  Tensor forward(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t batch,
                 KVCache& cache, bool all_positions = false) const {
    gpt2::StepRunner eager(false);
    return forward(ctx, tokens, batch, cache, eager, all_positions);
  }

  // "bf16" when weights and activations share a dtype, else "bf16 weights, f32 activations".
  std::string dtype_summary() const;
};

// The rows of `hidden` [batch * length, width] whose logits a step returns: all of them when
// all_positions, else each sequence's last position, copied into a [batch, width] tensor (only
// these go through the final norm and the LM head). Shared by every model family.
Tensor rows_for_logits(Context& ctx, const Tensor& hidden, std::int64_t batch, std::int64_t length,
                       bool all_positions);

// Opens `spec` as a Llama model when llama::is_llama(spec) says so (a synthetic Llama shape or a
// config.json with model_type "llama"), else as GPT-2. Throws Error on any problem.
std::unique_ptr<LanguageModel> open_model(const std::string& spec, Context& ctx,
                                          std::uint64_t synthetic_seed = 0,
                                          DType dtype = DType::F32);

}  // namespace attnscope
