// open_model and the shared part of LanguageModel (models/language_model.h): the one forward
// step (its checks, inputs, launch and the cache's advance), the recipe that strings a family's
// blocks into a step, the KV cache, the backend choice.
#include "models/language_model.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "models/gpt2/model.h"
#include "models/llama/model.h"
#include "ops/embedding.h"
#include "ops/heads.h"
#include "ops/linear.h"
#include "profiler/scope.h"
#include "profiler/summary.h"
#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"
#include "runtime/transfer.h"

namespace attnscope {

LanguageModel::LanguageModel(Positions positions, std::string source, ModelDTypes dtypes,
                             std::vector<StoredTensor> stored)
    : dtypes_(dtypes),
      positions_(positions),
      source_(std::move(source)),
      stored_(std::move(stored)),
      attention_(&ops::attention::find_backend("naive")) {}

std::string LanguageModel::dtype_summary() const {
  const std::string weights(dtype_name(weight_dtype()));
  if (weight_dtype() == activation_dtype()) return weights;
  return weights + " weights, " + std::string(dtype_name(activation_dtype())) + " activations";
}

bool LanguageModel::head_is_embedding() const {
  const StepTables tables = step_tables();
  return tables.lm_head.raw_data() == tables.token_embedding.raw_data();
}

std::string_view LanguageModel::positions_name() const {
  return positions_ == Positions::Learned ? "learned" : "rotary";
}

std::uint64_t LanguageModel::weight_bytes() const {
  const std::uint64_t bytes = bytes_without_lm_head();
  return head_is_embedding() ? bytes : bytes + step_tables().lm_head.nbytes();
}

void LanguageModel::set_attention(std::string_view name) {
  attention_ = &ops::attention::find_backend(name);
}

KVCache LanguageModel::new_cache(Context& ctx, std::int64_t batch, std::int64_t capacity) const {
  const ModelConfig& shape = config();
  check(capacity >= 1 && capacity <= shape.context_length, "kv cache",
        "capacity " + std::to_string(capacity) + " must be in [1, context length " +
            std::to_string(shape.context_length) + "]");
  return KVCache(shape.n_layers, batch, shape.n_kv_heads, capacity, shape.head_dim,
                 dtypes_.activations, ctx.allocator());
}

void LanguageModel::require_memory(Context& ctx, std::int64_t batch, std::int64_t capacity,
                                   std::int64_t tokens, bool all_positions,
                                   const std::string& where, const std::string& advice) const {
  const ModelConfig& shape = config();
  const auto count = [](std::initializer_list<std::int64_t> factors) {
    double product = 1.0;  // doubles: a hostile batch must not overflow the estimate itself
    for (std::int64_t f : factors) product *= static_cast<double>(f);
    return product;
  };
  const auto activation_size = static_cast<std::int64_t>(dtype_size(dtypes_.activations));
  const double kv_cache = count(
      {2, shape.n_layers, batch, shape.n_kv_heads, capacity, shape.head_dim, activation_size});
  const ops::attention::Shape step = {batch,  shape.n_heads,  shape.n_kv_heads,   tokens,
                                      tokens, shape.head_dim, dtypes_.activations};
  const auto attention = static_cast<double>(attention_->cost_model(ctx, step).temporary_bytes);
  const double mlp = count({batch, tokens, shape.d_ff, 2, activation_size});
  const double logits = count({batch, all_positions ? tokens : 1, shape.vocab_size, 4});
  const double needed = static_cast<double>(weight_bytes()) + kv_cache + attention + mlp + logits;
  const auto available = static_cast<double>(ctx.memory_bytes());
  const auto text = [](double bytes) {
    return bytes < 0x1p62 ? profiler::binary_bytes(static_cast<std::size_t>(bytes))
                          : std::string("more than 4 EiB");
  };
  check(needed <= available, where, [&] {
    return std::to_string(batch) + " x " + std::to_string(capacity) + " positions need at least " +
           text(needed) + " (weights " + text(static_cast<double>(weight_bytes())) + ", KV cache " +
           text(kv_cache) + ", attention temporaries " + text(attention) + ", MLP activations " +
           text(mlp) + ", logits " + text(logits) + "), more than the " + text(available) + " of " +
           (ctx.device() == Device::CPU ? "memory this machine has" : "memory on the GPU") + " (" +
           advice + ")";
  });
}

Tensor LanguageModel::forward(Context& ctx, std::span<const std::int32_t> tokens,
                              std::int64_t batch, KVCache& cache, StepRunner& runner,
                              bool all_positions) const {
  profiler::Scope scope(ctx, "forward", "step");
  const ModelConfig& shape = config();
  check(batch >= 1 && cache.batch() == batch, "forward",
        "batch " + std::to_string(batch) + " does not match the cache's " +
            std::to_string(cache.batch()));
  const auto total = static_cast<std::int64_t>(tokens.size());
  check(
      total > 0 && total % batch == 0, "forward",
      std::to_string(total) + " tokens do not split into " + std::to_string(batch) + " equal rows");
  const std::int64_t length = total / batch;
  const std::int64_t start = cache.length();
  check(start + length <= shape.context_length, "forward",
        std::to_string(start + length) + " tokens exceed the model's context length of " +
            std::to_string(shape.context_length));
  check(start + length <= cache.capacity(), "forward",
        std::to_string(start + length) + " tokens exceed the KV cache capacity of " +
            std::to_string(cache.capacity()));

  // Without learned positions every token reads row 0 of the zero table: step_inputs' positions
  // are start + i % length, so rows of length 1 starting at 0 give all zeros.
  const StepInputs inputs =
      positions_ == Positions::Learned
          ? step_inputs(ctx, tokens, length, start, shape.vocab_size)
          : step_inputs(ctx, tokens, /*length=*/1, /*start=*/0, shape.vocab_size);
  Tensor logits = runner.run(
      ctx, length == 1, [&] { return run_step(ctx, inputs, batch, length, cache, all_positions); });
  cache.advance(length);
  return logits;
}

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The rows of `hidden` [batch * length, width] whose logits a step returns: all of them when
// all_positions, else each sequence's last position, copied into a [batch, width] tensor (only
// these go through the final norm and the LM head).
Tensor rows_for_logits(Context& ctx, const Tensor& hidden, std::int64_t batch, std::int64_t length,
                       bool all_positions) {
  if (all_positions || length == 1) return hidden;
  Tensor last = Tensor::empty({batch, hidden.dim(1)}, hidden.dtype(), ctx.allocator());
  for (std::int64_t b = 0; b < batch; ++b) {
    Tensor row = last.slice_rows(b, b + 1);
    copy_into(ctx, hidden.slice_rows((b + 1) * length - 1, (b + 1) * length), row);
  }
  return last;
}

}  // namespace

Tensor LanguageModel::run_step(Context& ctx, const StepInputs& inputs, std::int64_t batch,
                               std::int64_t length, KVCache& cache, bool all_positions) const {
  const StepTables tables = step_tables();
  Tensor hidden = embed(ctx, inputs, tables, batch * length);
  for (std::int64_t i = 0; i < config().n_layers; ++i) {
    profiler::Scope layer_scope(ctx, "layer", "layer");
    {
      profiler::Scope block_scope(ctx, "attention_block", "block");
      attention_block(ctx, i, hidden, batch, length, cache);
    }
    {
      profiler::Scope block_scope(ctx, "mlp_block", "block");
      mlp_block(ctx, i, hidden);
    }
  }
  // Only the rows whose logits are wanted go through the final norm and the LM head.
  const Tensor last = rows_for_logits(ctx, hidden, batch, length, all_positions);
  Tensor normed = Tensor::empty(last.shape(), dtypes_.activations, ctx.allocator());
  final_norm(ctx, last, normed);
  return lm_head_logits(ctx, normed, tables.lm_head, batch);
}

Tensor LanguageModel::embed(Context& ctx, const StepInputs& inputs, const StepTables& tables,
                            std::int64_t rows) const {
  Tensor hidden = Tensor::empty({rows, config().d_model}, dtypes_.activations, ctx.allocator());
  if (inputs.device_ids.defined()) {
    ops::embedding(ctx, tables.token_embedding, tables.position_embedding, inputs.device_ids,
                   inputs.device_positions, hidden);
  } else {
    ops::embedding(ctx, tables.token_embedding, tables.position_embedding, inputs.tokens,
                   inputs.positions, hidden);
  }
  return hidden;
}

ops::attention::Call LanguageModel::attention_call(Context& ctx, KVCache& cache,
                                                   std::int64_t layer_index, std::int64_t heads,
                                                   std::int64_t tokens, std::int64_t head_dim,
                                                   float scale) const {
  ops::attention::Call call;
  call.q =
      Tensor::empty({cache.batch(), heads, tokens, head_dim}, dtypes_.activations, ctx.allocator());
  call.k = cache.keys(layer_index);
  call.v = cache.values(layer_index);
  call.kv_len = cache.length() + tokens;
  call.scale = scale;
  return call;
}

Tensor LanguageModel::attend_and_merge_heads(Context& ctx, ops::attention::Call& call) const {
  call.out = Tensor::empty(call.q.shape(), dtypes_.activations, ctx.allocator());
  attention_->attend(ctx, call);
  const std::int64_t batch = call.q.dim(0);
  const std::int64_t tokens = call.q.dim(2);
  const std::int64_t width = call.q.dim(1) * call.q.dim(3);
  Tensor merged = call.out.reshape({batch, tokens, width});
  if (tokens > 1) {
    merged = Tensor::empty({batch, tokens, width}, dtypes_.activations, ctx.allocator());
    ops::merge_heads(ctx, call.out, merged);
  }
  return merged.reshape({batch * tokens, width});
}

Tensor LanguageModel::lm_head_logits(Context& ctx, const Tensor& normed, const Tensor& lm_head,
                                     std::int64_t batch) const {
  const std::int64_t vocab = lm_head.dim(0);
  Tensor logits = Tensor::empty({normed.dim(0), vocab}, DType::F32, ctx.allocator());
  ops::linear(ctx, normed, lm_head, Tensor(), logits);
  return logits.reshape({batch, normed.dim(0) / batch, vocab});
}

ModelFamily model_family(const std::string& spec) {
  if (const std::optional<std::string> name = synthetic_name(spec)) {
    if (contains(gpt2::synthetic_names(), *name)) return ModelFamily::Gpt2;
    if (contains(llama::synthetic_names(), *name)) return ModelFamily::Llama;
    std::string valid;
    for (const auto& names : {gpt2::synthetic_names(), llama::synthetic_names()}) {
      for (const std::string& n : names) valid += (valid.empty() ? "" : ", ") + n;
    }
    throw Error("--model", "unknown synthetic model '" + *name + "' (valid: " + valid + ")");
  }
  namespace fs = std::filesystem;
  std::error_code error;
  check(fs::exists(spec, error), spec, [&] {
    return "no such file or directory (--model takes a Hugging Face checkpoint folder, which "
           "`python3 weights/download.py` fetches, or a built-in shape with random weights: "
           "synthetic:gpt2, synthetic:smollm2-135m, ...)";
  });
  const fs::path folder =
      fs::is_directory(spec, error) ? fs::path(spec) : fs::path(spec).parent_path();
  const fs::path config_path = model_folder_file(folder, "config.json");
  if (!fs::exists(config_path, error)) return ModelFamily::Gpt2;  // its loader says what is missing
  const std::string label = config_path.string();
  const nlohmann::json config = parse_json_refusing_duplicates(
      read_input_file(config_path, kMaxConfigBytes, "a config.json"), label, "");
  check(config.is_object(), label, "not a JSON object");
  const auto model_type = config.find("model_type");
  if (model_type == config.end()) return ModelFamily::Gpt2;
  check(model_type->is_string(), label,
        [&] { return "model_type must be a string, found " + json_excerpt(*model_type); });
  const std::string& type = model_type->get_ref<const std::string&>();
  if (type == "gpt2") return ModelFamily::Gpt2;
  if (type == "llama") return ModelFamily::Llama;
  throw Error(label, "unsupported model_type " + single_quoted(type) + " (supported: gpt2, llama)");
}

std::unique_ptr<LanguageModel> open_model(const std::string& spec, Context& ctx,
                                          std::uint64_t synthetic_seed, DType dtype) {
  if (model_family(spec) == ModelFamily::Llama) {
    return std::make_unique<llama::Model>(llama::Model::open(spec, ctx, synthetic_seed, dtype));
  }
  return std::make_unique<gpt2::Model>(gpt2::Model::open(spec, ctx, synthetic_seed, dtype));
}

}  // namespace attnscope
