// GPT-2's parameters, in the layout attnscope computes with: where a checkpoint is found, how it
// is read, and how the weights reach the device in the model's dtype.
//
// Hugging Face stores GPT-2's projections as Conv1D weights of shape [in, out]; attnscope keeps
// every projection as [out, in] (one row per output feature, torch.nn.Linear's layout), because
// then the tied LM head is simply the token embedding [V, C], and a decode step streams each
// weight row contiguously. Loading transposes once and widens f16/bf16 to f32, then narrows to
// the model's dtypes (ModelDTypes in models/checkpoint.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/checkpoint.h"
#include "models/gpt2/config.h"
#include "runtime/allocator.h"
#include "runtime/context.h"
#include "runtime/safetensors_index.h"
#include "runtime/tensor.h"

namespace attnscope::gpt2 {

struct LayerWeights {
  Tensor ln_1_weight, ln_1_bias;          // [C]
  Tensor attn_qkv_weight, attn_qkv_bias;  // [3C, C], [3C]   (c_attn)
  Tensor attn_out_weight, attn_out_bias;  // [C, C], [C]     (attn.c_proj)
  Tensor ln_2_weight, ln_2_bias;          // [C]
  Tensor mlp_up_weight, mlp_up_bias;      // [F, C], [F]     (c_fc)
  Tensor mlp_down_weight, mlp_down_bias;  // [C, F], [C]     (mlp.c_proj)
};

struct Weights {
  Tensor token_embedding;     // wte [V, C]
  Tensor position_embedding;  // wpe [P, C]
  std::vector<LayerWeights> layers;
  Tensor ln_f_weight, ln_f_bias;  // [C]
  Tensor lm_head;                 // [V, C]: wte itself when tied (always, in GPT-2)
};

// A model's parameters ready to compute with (models/checkpoint.h).
using Checkpoint = ModelCheckpoint<Gpt2Config, Weights>;

// `spec` is "synthetic:NAME" (seeded random weights of a known shape) or a directory holding
// config.json and model.safetensors, or a sharded model.safetensors.index.json with its shards
// (or that .safetensors or .index.json file itself). A directory with only
// pytorch_model.bin is refused with instructions to convert it. The weights are read in f32 on
// the host, then converted to model_dtypes(ctx.device(), dtype) (matrices to its weight dtype,
// the rest to its activation dtype) and copied to ctx's device; the tied LM head stays one
// tensor. Throws Error on any problem.
Checkpoint load_checkpoint(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                           DType dtype);

// Reads the weights of `config` from a safetensors checkpoint (one file or its shards) in Hugging
// Face's layout: keys with or
// without the "transformer." prefix, an optional lm_head.weight (tied to wte when absent), the
// legacy attn.bias / attn.masked_bias buffers ignored. Throws Error for a missing tensor, a wrong
// shape, an unsupported dtype or an unexpected key.
Weights load_weights(const SafetensorsCheckpoint& file, const Gpt2Config& config,
                     Allocator& allocator, int threads);

// The configs of the synthetic models: "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl" (the real
// shapes) and "tiny" (GPT-2's vocabulary, 2 layers of width 64, context 128: for fast tests).
Gpt2Config synthetic_config(const std::string& name);
std::vector<std::string> synthetic_names();
// Seeded random weights for `config` (GPT-2's initialisation: N(0, 0.02)-like projections, the
// output projections scaled by 1/sqrt(2 L), unit layer-norm gains, zero biases). The same seed
// gives the same weights on any machine and any thread count.
Weights synthetic_weights(const Gpt2Config& config, std::uint64_t seed, Allocator& allocator,
                          int threads);

// The checkpoint-side description of the synthetic weights (canonical names, f32).
std::vector<StoredTensor> synthetic_tensor_list(const Gpt2Config& config);

}  // namespace attnscope::gpt2
