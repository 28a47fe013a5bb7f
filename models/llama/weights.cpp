// Loading a Llama model's weights (models/llama/weights.h): finding the checkpoint (or making
// synthetic weights), reading Hugging Face's tensors into attnscope's stacked layout, and placing
// them on the device.
//
// Cost of reading: one pass over the file's bytes (memory-mapped), writing an f32 copy in
// attnscope's layout (the stacks are filled row block by row block, so no second copy), then for a
// 16-bit --dtype or a GPU a converted copy of each tensor that replaces its f32 one.
#include "models/llama/weights.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "runtime/safetensors_index.h"

namespace attnscope::llama {

namespace {

// One tensor of the checkpoint: its Hugging Face name, its shape there, where its rows go
// (`destination`, from row `row_offset`), whether it is a matrix (stored in the weight dtype)
// and how synthetic weights fill it.
enum class Init { Random, ScaledRandom, Ones };
struct TensorSlot {
  std::string name;
  Shape shape;
  Tensor* destination = nullptr;
  std::int64_t row_offset = 0;
  bool matrix = false;
  Init init = Init::Random;
};

// Every tensor of `config` in checkpoint order; allocates each destination in f32 (the stacks
// once, for all their parts). The LM head is not among them (see lm_head_slot).
std::vector<TensorSlot> tensor_slots(const LlamaConfig& config, Weights& weights,
                                     Allocator* allocator) {
  const std::int64_t c = config.hidden_size;
  const std::int64_t f = config.intermediate_size;
  const std::int64_t d = config.head_dim;
  const std::int64_t q_rows = config.num_attention_heads * d;
  const std::int64_t kv_rows = config.num_key_value_heads * d;
  auto make = [&](Tensor& t, const Shape& shape) {
    if (allocator != nullptr) t = Tensor::empty(shape, DType::F32, *allocator);
  };
  std::vector<TensorSlot> slots;
  make(weights.token_embedding, {config.vocab_size, c});
  slots.push_back(
      {"model.embed_tokens.weight", {config.vocab_size, c}, &weights.token_embedding, 0, true});
  weights.layers.resize(static_cast<std::size_t>(config.num_hidden_layers));
  for (std::int64_t i = 0; i < config.num_hidden_layers; ++i) {
    LayerWeights& l = weights.layers[static_cast<std::size_t>(i)];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    make(l.input_norm, {c});
    make(l.qkv, {q_rows + 2 * kv_rows, c});
    make(l.out, {c, q_rows});
    make(l.post_attention_norm, {c});
    make(l.gate_up, {2 * f, c});
    make(l.down, {c, f});
    slots.push_back({p + "input_layernorm.weight", {c}, &l.input_norm, 0, false, Init::Ones});
    slots.push_back({p + "self_attn.q_proj.weight", {q_rows, c}, &l.qkv, 0, true});
    slots.push_back({p + "self_attn.k_proj.weight", {kv_rows, c}, &l.qkv, q_rows, true});
    slots.push_back({p + "self_attn.v_proj.weight", {kv_rows, c}, &l.qkv, q_rows + kv_rows, true});
    if (config.qkv_bias) {
      make(l.qkv_bias, {q_rows + 2 * kv_rows});
      slots.push_back({p + "self_attn.q_proj.bias", {q_rows}, &l.qkv_bias, 0});
      slots.push_back({p + "self_attn.k_proj.bias", {kv_rows}, &l.qkv_bias, q_rows});
      slots.push_back({p + "self_attn.v_proj.bias", {kv_rows}, &l.qkv_bias, q_rows + kv_rows});
    }
    if (config.qk_norm) {
      make(l.q_norm, {d});
      make(l.k_norm, {d});
      slots.push_back({p + "self_attn.q_norm.weight", {d}, &l.q_norm, 0, false, Init::Ones});
      slots.push_back({p + "self_attn.k_norm.weight", {d}, &l.k_norm, 0, false, Init::Ones});
    }
    slots.push_back(
        {p + "self_attn.o_proj.weight", {c, q_rows}, &l.out, 0, true, Init::ScaledRandom});
    slots.push_back(
        {p + "post_attention_layernorm.weight", {c}, &l.post_attention_norm, 0, false, Init::Ones});
    slots.push_back({p + "mlp.gate_proj.weight", {f, c}, &l.gate_up, 0, true});
    slots.push_back({p + "mlp.up_proj.weight", {f, c}, &l.gate_up, f, true});
    slots.push_back({p + "mlp.down_proj.weight", {c, f}, &l.down, 0, true, Init::ScaledRandom});
  }
  make(weights.final_norm, {c});
  slots.push_back({"model.norm.weight", {c}, &weights.final_norm, 0, false, Init::Ones});
  return slots;
}

// The rows (of a vector: the elements) of `slot` inside its destination.
Tensor slot_rows(const TensorSlot& slot) {
  return slot.destination->slice_rows(slot.row_offset, slot.row_offset + slot.shape[0]);
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform on [-a, a], a = std_dev sqrt(3), each element a pure function of (stream, index), so
// the weights do not depend on the thread count (as gpt2's synthetic weights).
void fill_random(Tensor t, float std_dev, std::uint64_t stream, int threads) {
  float* data = t.data<float>();
  const std::int64_t n = t.numel();
  const float half_width = std_dev * std::sqrt(3.0f);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t bits = splitmix64(stream ^ static_cast<std::uint64_t>(i));
    const float unit = static_cast<float>(bits >> 40) * 0x1.0p-24f;  // [0, 1)
    data[i] = (2.0f * unit - 1.0f) * half_width;
  }
}

// Seeded random weights (std 0.02, the output projections scaled by 1 / sqrt(2 L), unit norm
// gains); the head is tied to the embedding when the config says so.
Weights synthetic_weights(const LlamaConfig& config, std::uint64_t seed, Allocator& allocator,
                          int threads) {
  Weights weights;
  std::vector<TensorSlot> slots = tensor_slots(config, weights, &allocator);
  const float std_dev = 0.02f;
  const float scaled = std_dev / std::sqrt(2.0f * static_cast<float>(config.num_hidden_layers));
  for (std::size_t index = 0; index < slots.size(); ++index) {
    const TensorSlot& slot = slots[index];
    Tensor rows = slot_rows(slot);
    if (slot.init == Init::Ones) {
      std::fill_n(rows.data<float>(), rows.numel(), 1.0f);
      continue;
    }
    const std::uint64_t stream = splitmix64(seed ^ (static_cast<std::uint64_t>(index) << 40));
    fill_random(rows, slot.init == Init::ScaledRandom ? scaled : std_dev, stream, threads);
  }
  weights.lm_head = weights.token_embedding;
  if (!config.tie_word_embeddings) {
    weights.lm_head = Tensor::empty({config.vocab_size, config.hidden_size}, DType::F32, allocator);
    fill_random(weights.lm_head, std_dev, splitmix64(seed ^ (slots.size() << 40)), threads);
  }
  return weights;
}

Weights load_weights(const SafetensorsCheckpoint& file, const LlamaConfig& config,
                     Allocator& allocator) {
  Weights weights;
  const std::vector<TensorSlot> slots = tensor_slots(config, weights, &allocator);
  CheckedTensorReader reader(file);
  auto read = [&](const std::string& name, const Shape& shape, Tensor rows) {
    const Tensor wide = reader.read(name, shape).to_dtype(DType::F32, allocator);
    std::memcpy(rows.raw_data(), wide.raw_data(), wide.nbytes());
  };
  for (const TensorSlot& slot : slots) read(slot.name, slot.shape, slot_rows(slot));
  // The head: a stored lm_head.weight is used even when the config ties it to the embedding, as
  // transformers 5 does (it warns and keeps a stored head that differs from the embedding); one
  // equal to the embedding is shared with it, as a tied head is.
  const Shape head_shape = {config.vocab_size, config.hidden_size};
  weights.lm_head = weights.token_embedding;
  if (!config.tie_word_embeddings || file.find("lm_head.weight")) {
    Tensor head = Tensor::empty(head_shape, DType::F32, allocator);
    read("lm_head.weight", head_shape, head);
    const bool same_as_embedding =
        std::memcmp(head.raw_data(), weights.token_embedding.raw_data(), head.nbytes()) == 0;
    if (!same_as_embedding) weights.lm_head = head;
  }
  reader.refuse_unread("Llama", [](const std::string&) { return false; });
  return weights;
}

std::vector<StoredTensor> synthetic_tensor_list(const LlamaConfig& config) {
  Weights unused;
  std::vector<StoredTensor> list;
  auto add = [&](const std::string& name, const Shape& shape) {
    list.push_back({name, "F32", shape, static_cast<std::uint64_t>(checked_numel(shape)) * 4});
  };
  for (const TensorSlot& slot : tensor_slots(config, unused, nullptr)) add(slot.name, slot.shape);
  if (!config.tie_word_embeddings) add("lm_head.weight", {config.vocab_size, config.hidden_size});
  return list;
}

// Every tensor of `weights` but the LM head, for place_weights.
std::vector<Placement> placements(Weights& weights) {
  std::vector<Placement> list = {{&weights.token_embedding, true}};
  for (LayerWeights& l : weights.layers) {
    list.insert(list.end(), {{&l.input_norm, false},
                             {&l.qkv, true},
                             {&l.out, true},
                             {&l.post_attention_norm, false},
                             {&l.gate_up, true},
                             {&l.down, true}});
    for (Tensor* optional : {&l.qkv_bias, &l.q_norm, &l.k_norm}) {
      if (optional->defined()) list.push_back({optional, false});
    }
  }
  list.push_back({&weights.final_norm, false});
  return list;
}

}  // namespace

Checkpoint load_checkpoint(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                           DType dtype) {
  // Llama's reader copies each tensor once, as it is, so it takes no thread count.
  auto load_f32 = [](const SafetensorsCheckpoint& file, const LlamaConfig& config,
                     Allocator& allocator,
                     int /*threads*/) { return load_weights(file, config, allocator); };
  Checkpoint checkpoint =
      read_checkpoint<LlamaConfig, Weights>(spec, ctx, synthetic_seed, dtype,
                                            {&synthetic_config, &synthetic_weights,
                                             &synthetic_tensor_list, &read_llama_config, load_f32});
  // Rows are hidden_size (q, k, v, gate, up, embedding, head), Hq D (o_proj) or F (down) wide.
  const LlamaConfig& config = checkpoint.config;
  check_weight_dtype_fits(
      {{"hidden_size", config.hidden_size},
       {"intermediate_size", config.intermediate_size},
       {"num_attention_heads x head_dim", config.num_attention_heads * config.head_dim}},
      checkpoint.dtypes.weights);
  place_weights(ctx, placements(checkpoint.weights), checkpoint.weights.token_embedding,
                checkpoint.weights.lm_head, checkpoint.dtypes);
  return checkpoint;
}

std::int64_t count_parameters(const LlamaConfig& config) {
  std::int64_t total = 0;
  for (const StoredTensor& t : synthetic_tensor_list(config)) total += checked_numel(t.shape);
  return total;
}

}  // namespace attnscope::llama
