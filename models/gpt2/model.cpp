#include "models/gpt2/model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "models/gpt2/tensor_map.h"
#include "ops/embedding.h"
#include "ops/gelu.h"
#include "ops/heads.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "profiler/scope.h"
#include "runtime/cuda/step_graph.h"
#include "runtime/error.h"
#include "runtime/transfer.h"

namespace attnscope::gpt2 {

namespace {

constexpr std::string_view kSyntheticPrefix = "synthetic:";

// The checkpoint file inside `spec` (a directory, or the .safetensors file itself).
std::filesystem::path find_checkpoint(const std::filesystem::path& spec) {
  namespace fs = std::filesystem;
  check(fs::exists(spec), spec.string(), "no such file or directory");
  const fs::path file = fs::is_directory(spec) ? spec / "model.safetensors" : spec;
  const std::string pickle_help =
      ": pickle checkpoints (pytorch_model.bin) are refused because loading them can run "
      "arbitrary code; convert it to model.safetensors with python: "
      "transformers.GPT2LMHeadModel.from_pretrained(DIR)"
      ".save_pretrained(DIR, safe_serialization=True)";
  if (file.extension() == ".bin") throw Error(file.string() + pickle_help);
  if (!fs::exists(file)) {
    if (fs::exists(spec / "pytorch_model.bin")) {
      throw Error((spec / "pytorch_model.bin").string() + pickle_help);
    }
    throw Error(spec.string(), "no model.safetensors here");
  }
  return file;
}

// Converts every weight to `dtype` on the host, then copies it to ctx's device. The tied LM head
// stays the token embedding (one copy on the device, not two).
void place_weights(const ModelConfig& config, Weights& weights, Context& ctx, DType dtype) {
  const bool tied = weights.lm_head.raw_data() == weights.token_embedding.raw_data();
  auto place = [&](Tensor& t) {
    const Tensor converted = t.dtype() == dtype ? t : t.to_dtype(dtype, ctx.host_allocator());
    t = to_device(ctx, converted);
  };
  for (const TensorSlot& slot : tensor_slots(config, weights)) place(*slot.destination);
  if (tied) {
    weights.lm_head = weights.token_embedding;
  } else {
    place(weights.lm_head);
  }
  ctx.synchronize();
}

}  // namespace

Model Model::open(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                  DType dtype) {
  check(dtype != DType::I32, "--dtype", "i32 is not a model dtype");
  check(ctx.device() == Device::CUDA || dtype == DType::F32, "--dtype",
        std::string(dtype_name(dtype)) + " needs --device cuda (the CPU path computes in f32)");
  Model model;
  model.source_ = spec;
  model.dtype_ = dtype;
  // Weights are read in f32 on the host (straight into their final place on the CPU).
  Allocator& staging = ctx.device() == Device::CPU ? ctx.allocator() : ctx.host_allocator();
  if (spec.starts_with(kSyntheticPrefix)) {
    const std::string name = spec.substr(kSyntheticPrefix.size());
    model.config_ = synthetic_config(name);
    model.weights_ = synthetic_weights(model.config_, synthetic_seed, staging, ctx.threads());
    model.stored_ = synthetic_tensor_list(model.config_);
  } else {
    const std::filesystem::path checkpoint = find_checkpoint(spec);
    model.config_ = read_model_config((checkpoint.parent_path() / "config.json").string());
    const SafetensorsFile file = SafetensorsFile::open(checkpoint.string());
    model.weights_ = load_weights(file, model.config_, staging, ctx.threads());
    for (const SafetensorsEntry& e : file.entries()) {
      model.stored_.push_back({e.name, e.dtype, e.shape, e.end - e.begin});
    }
  }
  if (ctx.device() != Device::CPU || dtype != DType::F32) {
    place_weights(model.config_, model.weights_, ctx, dtype);
  }
  model.set_attention("naive");
  return model;
}

std::int64_t Model::parameter_count() const { return count_parameters(config_); }

void Model::set_attention(std::string_view name) {
  attention_ = &ops::attention::find_backend(name);
}

KVCache Model::new_cache(Context& ctx, std::int64_t batch, std::int64_t capacity) const {
  check(capacity >= 1 && capacity <= config_.context_length, "kv cache",
        "capacity " + std::to_string(capacity) + " must be in [1, context length " +
            std::to_string(config_.context_length) + "]");
  return KVCache(config_.n_layers, batch, config_.n_kv_heads, capacity, config_.head_dim(), dtype_,
                 ctx.allocator());
}

Tensor Model::forward(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t batch,
                      KVCache& cache, bool all_positions) const {
  profiler::Scope scope(ctx, "forward", "step");
  check(batch >= 1 && cache.batch() == batch, "forward",
        "batch " + std::to_string(batch) + " does not match the cache's " +
            std::to_string(cache.batch()));
  const auto total = static_cast<std::int64_t>(tokens.size());
  check(
      total > 0 && total % batch == 0, "forward",
      std::to_string(total) + " tokens do not split into " + std::to_string(batch) + " equal rows");
  const std::int64_t length = total / batch;
  const std::int64_t start = cache.length();
  check(start + length <= config_.context_length, "forward",
        std::to_string(start + length) + " tokens exceed the model's context length of " +
            std::to_string(config_.context_length));
  check(start + length <= cache.capacity(), "forward",
        std::to_string(start + length) + " tokens exceed the KV cache capacity of " +
            std::to_string(cache.capacity()));

  const StepInputs inputs = prepare_inputs(ctx, tokens, length, start);
  auto step = [&] { return run_step(ctx, inputs, batch, length, cache, all_positions); };
  Tensor logits;
  // Decode steps on a GPU run as one CUDA graph, except while profiling: CUPTI then sees every
  // kernel launched on its own, inside its op's scope. The first decode step runs eagerly, so
  // every kernel it needs is loaded before a capture starts.
  const bool decode = length == 1;
  if constexpr (kCudaBuild) {
    if (ctx.device() == Device::CUDA && decode && cuda_graphs_ && ctx.profiler() == nullptr) {
      if (step_graph_) {
        logits = step_graph_->run(ctx, step);
      } else {
        step_graph_ = std::make_shared<gpu::StepGraph>();
      }
    }
  }
  if (!logits.defined()) logits = step();
  cache.advance(length);
  return logits;
}

Model::GraphCounts Model::graph_counts() const {
  if constexpr (kCudaBuild) {
    if (step_graph_) return {step_graph_->instantiations(), step_graph_->updates()};
  }
  return {};
}

Model::StepInputs Model::prepare_inputs(Context& ctx, std::span<const std::int32_t> tokens,
                                        std::int64_t length, std::int64_t start) const {
  StepInputs inputs;
  inputs.tokens = tokens;
  inputs.positions.resize(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    inputs.positions[i] = start + static_cast<std::int64_t>(i) % length;
  }
  if (ctx.device() == Device::CPU) return inputs;  // the CPU embedding checks ids itself
  // A kernel cannot throw: ids are checked here, before they are uploaded. Ids and positions
  // travel in one copy: [ids | positions].
  const auto count = static_cast<std::int64_t>(tokens.size());
  Tensor staged = Tensor::empty({2 * count}, DType::I32, ctx.host_allocator());
  std::int32_t* ids = staged.data<std::int32_t>();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int32_t id = tokens[static_cast<std::size_t>(i)];
    check(id >= 0 && id < config_.vocab_size, "forward",
          "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
              std::to_string(config_.vocab_size) + ")");
    ids[i] = id;
    ids[count + i] = static_cast<std::int32_t>(inputs.positions[static_cast<std::size_t>(i)]);
  }
  const Tensor uploaded = to_device(ctx, staged);
  inputs.device_ids = uploaded.slice_rows(0, count);
  inputs.device_positions = uploaded.slice_rows(count, 2 * count);
  return inputs;
}

Tensor Model::run_step(Context& ctx, const StepInputs& inputs, std::int64_t batch,
                       std::int64_t length, KVCache& cache, bool all_positions) const {
  const std::int64_t width = config_.d_model;
  Allocator& allocator = ctx.allocator();
  Tensor hidden = Tensor::empty({batch * length, width}, dtype_, allocator);
  if (inputs.device_ids.defined()) {
    ops::embedding(ctx, weights_.token_embedding, weights_.position_embedding, inputs.device_ids,
                   inputs.device_positions, hidden);
  } else {
    ops::embedding(ctx, weights_.token_embedding, weights_.position_embedding, inputs.tokens,
                   inputs.positions, hidden);
  }

  for (std::int64_t i = 0; i < config_.n_layers; ++i) {
    profiler::Scope layer_scope(ctx, "layer", "layer");
    const LayerWeights& layer = weights_.layers[static_cast<std::size_t>(i)];
    attention_block(ctx, layer, i, hidden, batch, length, cache);
    mlp_block(ctx, layer, hidden);
  }

  // Only the rows whose logits are wanted go through the final norm and the LM head.
  const std::int64_t rows = all_positions ? length : 1;
  Tensor last = hidden;
  if (!all_positions && length > 1) {
    last = Tensor::empty({batch, width}, dtype_, allocator);
    for (std::int64_t b = 0; b < batch; ++b) {
      Tensor row = last.slice_rows(b, b + 1);
      copy_into(ctx, hidden.slice_rows((b + 1) * length - 1, (b + 1) * length), row);
    }
  }
  Tensor normed = Tensor::empty(last.shape(), dtype_, allocator);
  ops::layer_norm(ctx, last, weights_.ln_f_weight, weights_.ln_f_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  Tensor logits = Tensor::empty({batch * rows, config_.vocab_size}, DType::F32, allocator);
  ops::linear(ctx, normed, weights_.lm_head, Tensor(), logits);
  return logits.reshape({batch, rows, config_.vocab_size});
}

void Model::attention_block(Context& ctx, const LayerWeights& layer, std::int64_t layer_index,
                            Tensor& hidden, std::int64_t batch, std::int64_t tokens,
                            KVCache& cache) const {
  profiler::Scope scope(ctx, "attention_block", "block");
  const std::int64_t width = config_.d_model;
  const std::int64_t heads = config_.n_heads;
  const std::int64_t head_dim = config_.head_dim();
  const std::int64_t rows = batch * tokens;
  Allocator& allocator = ctx.allocator();

  Tensor normed = Tensor::empty({rows, width}, dtype_, allocator);
  ops::layer_norm(ctx, hidden, layer.ln_1_weight, layer.ln_1_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  Tensor qkv = Tensor::empty({rows, 3 * width}, dtype_, allocator);
  ops::linear(ctx, normed, layer.attn_qkv_weight, layer.attn_qkv_bias, qkv);

  ops::attention::Call call;
  call.q = Tensor::empty({batch, heads, tokens, head_dim}, dtype_, allocator);
  call.k = cache.keys(layer_index);
  call.v = cache.values(layer_index);
  call.kv_len = cache.length() + tokens;
  call.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  ops::split_qkv(ctx, qkv.reshape({batch, tokens, 3 * width}), call.q, call.k, call.v,
                 cache.length());
  call.out = Tensor::empty(call.q.shape(), dtype_, allocator);
  attention_->forward(ctx, call);

  // [B, H, T, D] -> [B, T, H D]; with one token per row the two layouts are the same bytes.
  Tensor merged = call.out.reshape({batch, tokens, width});
  if (tokens > 1) {
    merged = Tensor::empty({batch, tokens, width}, dtype_, allocator);
    ops::merge_heads(ctx, call.out, merged);
  }
  // The residual connection is the projection's own: hidden += merged W_o^T + b_o.
  ops::linear_residual(ctx, merged.reshape({rows, width}), layer.attn_out_weight,
                       layer.attn_out_bias, hidden);
}

void Model::mlp_block(Context& ctx, const LayerWeights& layer, Tensor& hidden) const {
  profiler::Scope scope(ctx, "mlp_block", "block");
  const std::int64_t rows = hidden.dim(0);
  Allocator& allocator = ctx.allocator();
  Tensor normed = Tensor::empty(hidden.shape(), dtype_, allocator);
  ops::layer_norm(ctx, hidden, layer.ln_2_weight, layer.ln_2_bias,
                  static_cast<float>(config_.layer_norm_epsilon), normed);
  Tensor up = Tensor::empty({rows, config_.d_ff}, dtype_, allocator);
  ops::linear(ctx, normed, layer.mlp_up_weight, layer.mlp_up_bias, up);
  ops::gelu(ctx, up, up);
  ops::linear_residual(ctx, up, layer.mlp_down_weight, layer.mlp_down_bias, hidden);
}

}  // namespace attnscope::gpt2
