// GPT-2's parameters, in the layout attnscope computes with: where a checkpoint is found, how it
// is read, and how the weights reach the device in the model's dtype.
//
// Hugging Face stores GPT-2's projections as Conv1D weights of shape [in, out]; attnscope keeps
// every projection as [out, in] (one row per output feature, torch.nn.Linear's layout), because
// then the tied LM head is simply the token embedding [V, C], and a decode step streams each
// weight row contiguously. Loading transposes once and widens f16/bf16 to f32, then narrows to
// the model's dtypes (ModelDTypes below).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/config.h"
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

// The dtypes a model is stored and computed in, from the one --dtype a user asks for.
//  - cuda: weights, activations and the KV cache are all stored in it (math accumulates in f32).
//  - cpu: it is the storage dtype of the matrices only (the linear weights and the token
//    embedding, which GPT-2 ties to the LM head): they are what a decode step reads, so 16 bits
//    halve its memory traffic, and q8_0 (blocks of 32 int8 values sharing an f16 scale,
//    runtime/q8_0.h) cuts it to 34/32 bytes per weight. Activations, biases, layer norms, the
//    position embedding, the KV cache and the logits stay f32, because the cpu kernels compute on
//    f32 activations.
struct ModelDTypes {
  DType activations = DType::F32;
  DType weights = DType::F32;
};
// Throws Error for i32, and for q8_0 on cuda (q8_0 runs on the cpu only).
ModelDTypes model_dtypes(Device device, DType requested);

// Replaces `t` by its conversion to `dtype` (on the host) placed on ctx's device; the original is
// freed once nothing else holds it. Every model family's loader places its weights this way.
void place_tensor(Context& ctx, Tensor& t, DType dtype);
// The width of one kind of matrix row, named as the config names it ("n_inner").
struct RowWidth {
  std::string_view name;
  std::int64_t width = 0;
};
// Throws Error unless a model's matrices can be stored in `weights`: q8_0 needs every row width
// (each family lists its own) to be whole blocks of 32 values.
void check_weight_dtype_fits(std::initializer_list<RowWidth> row_widths, DType weights);

// One tensor as the checkpoint stores it, for `attnscope inspect`.
struct StoredTensor {
  std::string name;
  std::string dtype;
  Shape shape;
  std::uint64_t bytes = 0;
};

// A model's parameters ready to compute with: its config, its weights on the context's device,
// and the tensors as the checkpoint stores them.
struct Checkpoint {
  ModelConfig config;
  ModelDTypes dtypes;  // what the weights were converted to
  Weights weights;
  std::vector<StoredTensor> stored;
};

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
Weights load_weights(const SafetensorsCheckpoint& file, const ModelConfig& config,
                     Allocator& allocator, int threads);

// The configs of the synthetic models: "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl" (the real
// shapes) and "tiny" (GPT-2's vocabulary, 2 layers of width 64, context 128: for fast tests).
ModelConfig synthetic_config(const std::string& name);
std::vector<std::string> synthetic_names();
// Seeded random weights for `config` (GPT-2's initialisation: N(0, 0.02)-like projections, the
// output projections scaled by 1/sqrt(2 L), unit layer-norm gains, zero biases). The same seed
// gives the same weights on any machine and any thread count.
Weights synthetic_weights(const ModelConfig& config, std::uint64_t seed, Allocator& allocator,
                          int threads);

// The checkpoint-side description of the synthetic weights (canonical names, f32).
std::vector<StoredTensor> synthetic_tensor_list(const ModelConfig& config);

}  // namespace attnscope::gpt2
