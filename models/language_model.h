// LanguageModel: what every tool needs from a model, whichever family it is.
//
// attnscope runs two families, GPT-2 (models/gpt2/) and Llama (models/llama/). Each keeps its own
// weights, config and blocks (attention_block, mlp_block, final_norm), because those are what a
// reader studies; the tools (generate, bench, perplexity, profile, compare, inspect) only open a
// model, size a KV cache, choose an attention backend and step it forward. That shared part is
// this base class: it owns the one forward() (its checks, the step inputs, the runner call, the
// cache's advance), the recipe of a step that strings a family's blocks together (run_step:
// embedding, L layers of an attention and an MLP block, final norm, LM head), new_cache() and the
// attention backend, and open_model() picks the family from the spec. A base class was chosen
// over a family switch inside one Model type: each model file stays readable on its own, and
// adding a family means one folder and one line in open_model(). The virtual calls are two per
// layer and a few per forward step, which cost nothing beside the step.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/checkpoint.h"
#include "models/model_config.h"
#include "models/step_runner.h"
#include "ops/attention/paged.h"
#include "ops/attention/registry.h"
#include "ops/rotary_embedding.h"
#include "runtime/context.h"
#include "runtime/kv_cache.h"
#include "runtime/paged_kv_cache.h"

namespace attnscope {

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;

  // The shape the tools size things from (vocabulary, context length, layers, heads, eos).
  // GPT-2's own config; for Llama a summary of its LlamaConfig (model_type "llama").
  virtual const ModelConfig& config() const = 0;
  // The storage dtype of the matrices (linear weights and the token embedding / LM head): the
  // --dtype asked for, on any device.
  DType weight_dtype() const { return dtypes_.weights; }
  // The storage dtype of activations, the other parameters and the KV cache: the weight dtype on
  // cuda, f32 on the cpu (ModelDTypes in models/checkpoint.h). Logits are always f32.
  DType activation_dtype() const { return dtypes_.activations; }
  // The shape of one layer's attention call in a step of `batch` rows of q_len new tokens behind
  // kv_len - q_len cached ones: q, k and v in the activation dtype, and with bf16 weights the
  // leave to round the products' operands to bf16 (ops::attention::Call::bf16_products), as
  // forward() calls it.
  ops::attention::Shape attention_shape(std::int64_t batch, std::int64_t q_len,
                                        std::int64_t kv_len) const;
  // Bytes of all parameters as stored (a tied LM head counted once): what a decode step reads.
  std::uint64_t weight_bytes() const;
  // Whether the LM head is the token embedding matrix itself (one copy), as the weights were
  // loaded: a checkpoint's own lm_head.weight is a head of its own even under a tied config.
  bool head_is_embedding() const;
  // How positions enter: "learned" (Positions::Learned) or "rotary" (Positions::Rotary).
  std::string_view positions_name() const;
  const std::string& source() const { return source_; }
  // The tensors as the checkpoint stores them (for `inspect`).
  const std::vector<StoredTensor>& stored_tensors() const { return stored_; }
  virtual std::int64_t parameter_count() const = 0;
  // The elements of the layers' projection matrices (attention's q, k, v and output, the MLP's;
  // not the embedding, not the LM head). A token multiplies each once (a multiply and an add),
  // so a step over T tokens spends 2 T x this FLOPs in them. Counted from the matrices the model
  // holds rather than re-derived from the config by a formula in each tool, so the cost models
  // (profile, compare) follow whatever the family has: GQA's narrower K and V projections,
  // SwiGLU's third matrix, a head_dim other than d_model / n_heads.
  virtual std::int64_t projection_weights() const = 0;

  // Chooses the attention backend by name (see ops/attention); throws Error for unknown names.
  void set_attention(std::string_view name);
  const ops::attention::Backend& attention() const { return *attention_; }

  // A cache of n_kv_heads heads for `batch` sequences of up to `capacity` tokens (at most the
  // context length).
  KVCache new_cache(Context& ctx, std::int64_t batch, std::int64_t capacity) const;

  // Refuses, before anything is allocated, a run whose memory cannot fit on ctx's device: the
  // weights, a cache of `batch` x `capacity` positions, and the largest step, `tokens` new tokens
  // per row (the prefill) with all their logits when all_positions. Throws
  // Error(where, "... needs at least N GiB (...), more than the M GiB ... (ADVICE)"), naming the
  // flag to change in `advice`. The count is a floor (KV cache, the backend's attention
  // temporaries from its cost model, the MLP's hidden activations, the logits), so a run it
  // passes may still fail later, with an out-of-memory error.
  void require_memory(Context& ctx, std::int64_t batch, std::int64_t capacity, std::int64_t tokens,
                      bool all_positions, const std::string& where,
                      const std::string& advice) const;

  // Runs `tokens` (batch rows of T = tokens.size() / batch ids, row-major) at the positions
  // following the cache's contents, and appends their keys and values to the cache.
  // Returns f32 logits [batch, T, V] when all_positions, else [batch, 1, V] for the last token,
  // on ctx's device (use to_host() to read them on the host), launched by `runner`, which may
  // replay a GPU decode step as one CUDA graph (the overload without a runner launches every
  // kernel eagerly). Throws Error for out-of-range ids or when the cache or the context would
  // overflow.
  Tensor forward(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t batch,
                 KVCache& cache, StepRunner& runner, bool all_positions = false) const;
  Tensor forward(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t batch,
                 KVCache& cache, bool all_positions = false) const {
    StepRunner eager(false);
    return forward(ctx, tokens, batch, cache, eager, all_positions);
  }

  // One sequence's part of a ragged step (forward_paged): its new tokens (a prefill chunk, or
  // the one token of a decode step), how many of its positions are in the cache already (their
  // keys and values written by earlier steps, or shared from a cached prefix), and its block
  // table, which must cover cached + tokens.size() positions.
  struct SequenceStep {
    std::span<const std::int32_t> tokens;
    std::int64_t cached = 0;
    std::span<const std::int64_t> blocks;
  };
  // The engine's step: the new tokens of every sequence in `sequences` in one forward pass over
  // the concatenated rows (one GEMM per projection for all of them), each attending to its own
  // positions in `cache` through its block table (the backend's attend_paged), each new token's
  // keys and values written into its slot. Returns f32 logits [S, V] on ctx's device, row s for
  // the last new token of sequence s. The caller owns the blocks (runtime/block_pool.h): every
  // slot written must be in a block no other sequence holds. Throws Error for an empty step, a
  // sequence with no tokens, out-of-range ids, a step past the context length, a block table
  // that does not cover the positions, or a cache of another model's shape.
  Tensor forward_paged(Context& ctx, std::span<const SequenceStep> sequences,
                       PagedKVCache& cache) const;
  // f32 logits [rows, V] of residual-stream rows hidden [rows, C] (activation dtype, on ctx's
  // device): the final norm and the LM head, what a step does after its last layer. Given the
  // rows after an earlier layer (AttentionTap::layer_output), it is a logit lens: what the model
  // would predict if it stopped there.
  Tensor logits_of_hidden(Context& ctx, const Tensor& hidden) const;

  // The shape of this model's paged cache with blocks of `block_tokens` positions, holding
  // `kv_dtype` elements (default: the activations'). Throws Error for a dtype that cannot serve
  // them on this model's device (kv_dtype_refusal, runtime/paged_kv_cache.h).
  PagedKVCache::Geometry kv_geometry(std::int64_t block_tokens,
                                     std::optional<DType> kv_dtype = std::nullopt) const;

  // "bf16" when weights and activations share a dtype, else "bf16 weights, f32 activations".
  std::string dtype_summary() const;

 protected:
  // Where a family's tokens take their position from. Learned: a position embedding, whose row
  // start + t token t of a step reads (GPT-2). Rotary: none in the embedding (every token reads
  // row 0 of a one-row zero table); the blocks rotate q and k from the cache length (Llama).
  enum class Positions { Learned, Rotary };
  // A family's constructor passes what its open() loaded: the spec it came from, the dtypes and
  // the tensors as the checkpoint stores them. The attention backend starts as "naive".
  LanguageModel(Positions positions, std::string source, ModelDTypes dtypes,
                std::vector<StoredTensor> stored);

  // The tables a step reads outside its blocks: the token embedding [V, C], the position
  // embedding (learned rows; undefined for a rotary family) and the LM head [V, C] (the token
  // embedding itself when tied).
  struct StepTables {
    Tensor token_embedding;
    Tensor position_embedding;
    Tensor lm_head;
  };
  virtual StepTables step_tables() const = 0;
  // Bytes of every parameter but the LM head, as stored (weight_bytes adds an untied head).
  virtual std::uint64_t bytes_without_lm_head() const = 0;
  // Where a step's new tokens sit and where their keys and values go, which the blocks pass to
  // attend() without looking inside: each token's position (i32 [N] on the device), and either a
  // contiguous KVCache (`batch` rows of `tokens` tokens after its length: forward) or a paged
  // cache with its ragged batch (forward_paged).
  struct PagedStep {
    PagedKVCache& cache;
    ops::attention::RaggedBatch batch;
    Tensor slots;  // i32 [N] on the device: block * block_tokens + offset of each new token
  };
  struct StepKv {
    Tensor positions;
    KVCache* cache = nullptr;
    std::int64_t batch = 0, tokens = 0;
    const PagedStep* paged = nullptr;
    // A replayed decode step's (contiguous cache): i32 [batch] on the device, each row's key
    // count after this step, which the backend reads there (Call::kv_lens); else undefined.
    Tensor kv_lens;
  };

  // A family's blocks, which run_step calls in order. attention_block: layer `layer_index` of the
  // step's N new tokens, which adds its output onto the residual stream `hidden` [N, C] and whose
  // keys and values attend() writes where `kv` says. mlp_block: the same layer's MLP, added onto
  // `hidden`. final_norm: the last norm, `hidden` into `normed` (same shape), before the LM head.
  virtual void attention_block(Context& ctx, std::int64_t layer_index, Tensor& hidden,
                               const StepKv& kv) const = 0;
  virtual void mlp_block(Context& ctx, std::int64_t layer_index, Tensor& hidden) const = 0;
  virtual void final_norm(Context& ctx, const Tensor& hidden, Tensor& normed) const = 0;

  // The heads of a family's attention: Hq query and Hkv key/value heads of head_dim, the score
  // scale, and the rotary table when the family rotates q and k (nullptr for learned positions).
  struct AttentionHeads {
    std::int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
    float scale = 1.0f;
    const ops::RotaryTable* rotary = nullptr;
  };
  // The middle of every attention block, the same for every family: from the fused projection
  // qkv [N, (Hq + 2 Hkv) D] of the step's new tokens to the attention output as rows
  // [N, Hq D], ready for the output projection. Rotates the q and k heads at their positions
  // (ops::rotary_embedding_, when heads.rotary), hands out the heads and writes the new keys and
  // values into the cache (ops::split_qkv, or ops::split_qkv_paged), runs the attention backend
  // (attend, or attend_paged) and brings the heads back together (merge_heads, when a row holds
  // more than one token: with one token per row the two layouts are the same bytes).
  Tensor attend(Context& ctx, std::int64_t layer_index, Tensor& qkv, const AttentionHeads& heads,
                const StepKv& kv) const;

  // Set by the constructor; the blocks store their activations in dtypes_.activations.
  ModelDTypes dtypes_;

 private:
  // Everything of a forward step that runs on the device, for the N new tokens of `inputs`
  // (whose keys and values attend() writes where `kv` says): hidden = embed(tokens, positions);
  // for each layer (profiled as "layer", its blocks as "attention_block" and "mlp_block") the
  // attention block, then the MLP block; the final norm of the rows whose logits are wanted; the
  // LM head (logits_of_hidden). `logit_rows` lists those rows (empty: every row). Returns f32
  // logits [logit rows, V]. An attached AttentionTap sees each layer's output.
  Tensor run_step(Context& ctx, const StepInputs& inputs, const StepKv& kv,
                  std::span<const std::int64_t> logit_rows) const;
  // The first op of run_step: hidden [N, C] in the activation dtype, each token's row of the
  // token embedding plus, with learned positions, the row of the position embedding.
  Tensor embed(Context& ctx, const StepInputs& inputs, const StepTables& tables) const;
  // The last op of run_step: f32 logits [rows, V] of the final norm's output `normed`
  // ([rows, C]) against `lm_head` ([V, C]).
  Tensor lm_head_logits(Context& ctx, const Tensor& normed, const Tensor& lm_head) const;

  Positions positions_;
  std::string source_;
  std::vector<StoredTensor> stored_;
  // The backend the blocks call (set_attention).
  const ops::attention::Backend* attention_;
};

// The families attnscope runs, and the one a `--model` spec names: a synthetic shape of either
// family ("synthetic:gpt2", "synthetic:smollm2-135m"), or a checkpoint whose config.json says
// "model_type": "gpt2" (or says none, as old GPT-2 configs do), "llama", "mistral", "qwen2" or
// "qwen3" (the Llama family's blocks). Reads config.json through the one opener
// (runtime/input_file.h) before any weight is touched. Throws Error naming what is wrong: a spec
// that names no file (with how to get a checkpoint or use a synthetic model), an unknown synthetic
// name (with every valid one), a model_type that is not a string, or an unsupported one
// ("unsupported model_type 'gemma' (supported: gpt2, llama, mistral, qwen2, qwen3)").
enum class ModelFamily { Gpt2, Llama };
ModelFamily model_family(const std::string& spec);
// Every synthetic shape's name, both families, comma-separated ("gpt2, gpt2-medium, ...").
std::string synthetic_model_names();

// Opens `spec` as a model of model_family(spec). Throws Error on any problem.
std::unique_ptr<LanguageModel> open_model(const std::string& spec, Context& ctx,
                                          std::uint64_t synthetic_seed = 0,
                                          DType dtype = DType::F32);

}  // namespace attnscope
