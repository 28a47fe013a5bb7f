// Loading GPT-2's weights: finding the checkpoint (or making synthetic weights), reading a Hugging
// Face safetensors file (or the shards of a sharded one) into attnscope's layout, and placing the
// weights on the device.
//
// Cost of reading: one pass over the file's bytes (memory-mapped, so the OS pages them in), writing
// an f32 copy in attnscope's layout, then (for a 16-bit or q8_0 --dtype) a narrow copy of each
// matrix that replaces its f32 one: peak memory is the f32 model plus one matrix; resident memory
// is 2 bytes (16-bit) or 34/32 bytes (q8_0) per matrix parameter and 4 per other parameter.
#include "models/gpt2/weights.h"

#include <filesystem>
#include <string_view>

#include "models/gpt2/tensor_map.h"
#include "runtime/error.h"

namespace attnscope::gpt2 {

namespace {

constexpr std::string_view kPrefix = "transformer.";

// Old checkpoints carry the causal mask and its fill value as buffers; attnscope builds its own.
bool is_legacy_buffer(std::string_view name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}

// An f32 copy of the 2-D or 1-D `src`, transposed from [rows, cols] to [cols, rows] if asked.
// An f32 source is transposed straight from the mapped file: one copy, not two.
Tensor to_f32(const Tensor& src, bool transpose, Allocator& allocator, int threads) {
  if (!transpose) return src.to_dtype(DType::F32, allocator);
  const Tensor wide = src.dtype() == DType::F32 ? src : src.to_dtype(DType::F32, allocator);
  const std::int64_t rows = src.dim(0);
  const std::int64_t cols = src.dim(1);
  Tensor out = Tensor::empty({cols, rows}, DType::F32, allocator);
  const float* in = wide.data<float>();
  float* dst = out.data<float>();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t c = 0; c < cols; ++c) {
    for (std::int64_t r = 0; r < rows; ++r) dst[c * rows + r] = in[r * cols + c];
  }
  return out;
}

}  // namespace

Checkpoint load_checkpoint(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                           DType dtype) {
  Checkpoint checkpoint = read_checkpoint<Gpt2Config, Weights>(
      spec, ctx, synthetic_seed, dtype,
      {&synthetic_config, &synthetic_weights, &synthetic_tensor_list, &read_gpt2_config,
       &load_weights});
  // Every matrix row is d_model (qkv, attn out, mlp up, token embedding) or d_ff (mlp down) wide.
  check_weight_dtype_fits(
      {{"n_embd", checkpoint.config.d_model}, {"n_inner", checkpoint.config.d_ff}},
      checkpoint.dtypes.weights);
  std::vector<Placement> placements;
  for (const TensorSlot& slot : tensor_slots(checkpoint.config, checkpoint.weights)) {
    placements.push_back({slot.destination, slot.matrix});
  }
  place_weights(ctx, placements, checkpoint.weights.token_embedding, checkpoint.weights.lm_head,
                checkpoint.dtypes);
  return checkpoint;
}

Weights load_weights(const SafetensorsCheckpoint& file, const Gpt2Config& config,
                     Allocator& allocator, int threads) {
  Weights weights;
  const std::vector<TensorSlot> slots = tensor_slots(config, weights);
  bool prefixed = false;
  for (const SafetensorsEntry& e : file.entries()) prefixed |= e.name.starts_with(kPrefix);

  CheckedTensorReader reader(file);
  auto load = [&](const std::string& key, const Shape& shape, bool transpose) {
    return to_f32(reader.read(key, shape), transpose, allocator, threads);
  };
  for (const TensorSlot& slot : slots) {
    const std::string key = prefixed ? std::string(kPrefix) + slot.name : slot.name;
    *slot.destination = load(key, slot.stored_shape, slot.transpose);
  }
  weights.lm_head = file.find("lm_head.weight")
                        ? load("lm_head.weight", {config.vocab_size, config.d_model}, false)
                        : weights.token_embedding;

  reader.refuse_unread("GPT-2", is_legacy_buffer);
  return weights;
}

}  // namespace attnscope::gpt2
