// The parameters of a Hugging Face LlamaForCausalLM, in the layout attnscope computes with:
// where a checkpoint is found, how it is read, and how the weights reach the device.
//
// Every projection is kept as torch.nn.Linear stores it, [out, in]. Two stacks are made once at
// load, so that each block's input is read by one GEMM, not two or three:
//  - qkv = [q_proj; k_proj; v_proj], [(Hq + 2 Hkv) D, C]: ops::split_qkv then hands out the
//    query heads and appends the Hkv key and value heads to the cache (ops/heads.h);
//  - gate_up = [gate_proj; up_proj], [2 F, C]: ops::swiglu's input layout (ops/swiglu.h).
// The dtypes are every family's (ModelDTypes in models/checkpoint.h): on the cpu the matrices
// (and the token embedding, the tied LM head) are stored in --dtype and everything else in f32;
// on cuda all of it is stored in --dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/checkpoint.h"
#include "models/llama/config.h"
#include "runtime/allocator.h"
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::llama {

struct LayerWeights {
  Tensor input_norm;           // [C]                  input_layernorm
  Tensor qkv;                  // [(Hq + 2 Hkv) D, C]  self_attn.{q,k,v}_proj stacked
  Tensor qkv_bias;             // [(Hq + 2 Hkv) D]     their biases stacked (Qwen2), else none
  Tensor q_norm;               // [D]                  self_attn.q_norm (Qwen3), else none
  Tensor k_norm;               // [D]                  self_attn.k_norm (Qwen3), else none
  Tensor out;                  // [C, Hq D]            self_attn.o_proj
  Tensor post_attention_norm;  // [C]                  post_attention_layernorm
  Tensor gate_up;              // [2 F, C]             mlp.{gate,up}_proj stacked
  Tensor down;                 // [C, F]               mlp.down_proj
};

struct Weights {
  Tensor token_embedding;  // [V, C]  model.embed_tokens
  std::vector<LayerWeights> layers;
  Tensor final_norm;  // [C]     model.norm
  Tensor lm_head;     // [V, C]  lm_head, or token_embedding itself when tied
};

// A model's parameters ready to compute with (models/checkpoint.h).
using Checkpoint = ModelCheckpoint<LlamaConfig, Weights>;

// `spec` is "synthetic:NAME" or a directory with config.json and model.safetensors (or a sharded
// model.safetensors.index.json; find_checkpoint in models/checkpoint.h). The weights are read in
// f32 on the host, then converted to model_dtypes(ctx.device(), dtype) and copied to ctx's
// device. Throws Error on any problem (a missing or unexpected tensor, a wrong shape).
Checkpoint load_checkpoint(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                           DType dtype);

// The synthetic shapes: "llama-tiny" (2 layers of width 64, 4 query and 2 key/value heads, a
// 512-token vocabulary: for tests), "smollm2-135m", "llama-3.2-1b", "qwen2.5-0.5b" and
// "qwen3-0.6b" (the real shapes).
LlamaConfig synthetic_config(const std::string& name);
std::vector<std::string> synthetic_names();

// Parameters as Hugging Face counts them (a tied LM head counted once).
std::int64_t count_parameters(const LlamaConfig& config);

}  // namespace attnscope::llama
