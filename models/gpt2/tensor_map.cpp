#include "models/gpt2/tensor_map.h"

namespace attnscope::gpt2 {

std::vector<TensorSlot> tensor_slots(const Gpt2Config& config, Weights& weights) {
  const std::int64_t c = config.d_model;
  const std::int64_t f = config.d_ff;
  std::vector<TensorSlot> slots;
  slots.push_back(
      {"wte.weight", {config.vocab_size, c}, false, Init::Normal, &weights.token_embedding, true});
  slots.push_back(
      {"wpe.weight", {config.context_length, c}, false, Init::Normal, &weights.position_embedding});
  weights.layers.resize(static_cast<std::size_t>(config.n_layers));
  for (std::int64_t i = 0; i < config.n_layers; ++i) {
    LayerWeights& l = weights.layers[static_cast<std::size_t>(i)];
    const std::string p = "h." + std::to_string(i) + ".";
    slots.push_back({p + "ln_1.weight", {c}, false, Init::Ones, &l.ln_1_weight});
    slots.push_back({p + "ln_1.bias", {c}, false, Init::Zeros, &l.ln_1_bias});
    slots.push_back(
        {p + "attn.c_attn.weight", {c, 3 * c}, true, Init::Normal, &l.attn_qkv_weight, true});
    slots.push_back({p + "attn.c_attn.bias", {3 * c}, false, Init::Zeros, &l.attn_qkv_bias});
    slots.push_back(
        {p + "attn.c_proj.weight", {c, c}, true, Init::ScaledNormal, &l.attn_out_weight, true});
    slots.push_back({p + "attn.c_proj.bias", {c}, false, Init::Zeros, &l.attn_out_bias});
    slots.push_back({p + "ln_2.weight", {c}, false, Init::Ones, &l.ln_2_weight});
    slots.push_back({p + "ln_2.bias", {c}, false, Init::Zeros, &l.ln_2_bias});
    slots.push_back({p + "mlp.c_fc.weight", {c, f}, true, Init::Normal, &l.mlp_up_weight, true});
    slots.push_back({p + "mlp.c_fc.bias", {f}, false, Init::Zeros, &l.mlp_up_bias});
    slots.push_back(
        {p + "mlp.c_proj.weight", {f, c}, true, Init::ScaledNormal, &l.mlp_down_weight, true});
    slots.push_back({p + "mlp.c_proj.bias", {c}, false, Init::Zeros, &l.mlp_down_bias});
  }
  slots.push_back({"ln_f.weight", {c}, false, Init::Ones, &weights.ln_f_weight});
  slots.push_back({"ln_f.bias", {c}, false, Init::Zeros, &weights.ln_f_bias});
  return slots;
}

std::int64_t count_parameters(const Gpt2Config& config) {
  Weights scratch;
  std::int64_t total = 0;
  for (const TensorSlot& slot : tensor_slots(config, scratch)) {
    total += checked_numel(slot.stored_shape);
  }
  return total;
}

}  // namespace attnscope::gpt2
