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
#include "ops/rotary_embedding.h"
#include "profiler/scope.h"
#include "profiler/summary.h"
#include "runtime/attention_tap.h"
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
  const auto attention = static_cast<double>(
      attention_->cost_model(ctx, attention_shape(batch, tokens, tokens)).temporary_bytes);
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

  Tensor logits;
  const ops::attention::Shape decode = attention_shape(batch, 1, cache.capacity());
  if (length == 1 && runner.can_replay(ctx) && attention_->reads_row_lengths(ctx, decode)) {
    // A decode step a CUDA graph replays unchanged: every kernel reads the step's ids, positions
    // and row lengths from the runner's fixed buffer, and attention is bounded by the capacity.
    check_token_ids(tokens, shape.vocab_size);
    const std::vector<std::int32_t> positions(static_cast<std::size_t>(batch),
                                              static_cast<std::int32_t>(start));
    const std::vector<std::int32_t> kv_lens(static_cast<std::size_t>(batch),
                                            static_cast<std::int32_t>(start + 1));
    const std::vector<Tensor> fixed = runner.upload_fixed(ctx, {tokens, positions, kv_lens});
    const StepInputs inputs{fixed[0], fixed[1]};
    const StepKv kv{inputs.positions, &cache, batch, length, nullptr, fixed[2]};
    // What the captured launches' arguments were made from: a change of any means a new capture.
    const auto address = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    std::vector<std::uintptr_t> key = {
        address(this), address(attention_), address(fixed[0].raw_data()),
        static_cast<std::uintptr_t>(cache.capacity()), static_cast<std::uintptr_t>(batch)};
    for (std::int64_t layer = 0; layer < shape.n_layers; ++layer) {  // each its own allocation
      key.push_back(address(cache.keys(layer).raw_data()));
      key.push_back(address(cache.values(layer).raw_data()));
    }
    logits = runner.replay(ctx, key, [&] { return run_step(ctx, inputs, kv, {}); });
  } else {
    const StepInputs inputs = step_inputs(ctx, tokens, length, start, shape.vocab_size);
    // The rows whose logits are wanted: all of them, or each row's last token.
    std::vector<std::int64_t> logit_rows;
    if (!all_positions && length > 1) {
      for (std::int64_t b = 1; b <= batch; ++b) logit_rows.push_back(b * length - 1);
    }
    const StepKv kv{inputs.positions, &cache, batch, length, nullptr, Tensor()};
    logits = runner.run(ctx, length == 1, [&] { return run_step(ctx, inputs, kv, logit_rows); });
  }
  cache.advance(length);
  return logits.reshape({batch, logits.dim(0) / batch, shape.vocab_size});
}

PagedKVCache::Geometry LanguageModel::kv_geometry(std::int64_t block_tokens,
                                                  std::optional<DType> kv_dtype) const {
  const ModelConfig& shape = config();
  const DType dtype = kv_dtype.value_or(dtypes_.activations);
  const Device device = step_tables().token_embedding.device();  // where the weights live
  const std::string refusal = kv_dtype_refusal(device, dtypes_.activations, dtype, shape.head_dim);
  check(refusal.empty(), "--kv-dtype", refusal);
  return {shape.n_layers, shape.n_kv_heads, shape.head_dim, block_tokens, dtype};
}

Tensor LanguageModel::forward_paged(Context& ctx, std::span<const SequenceStep> sequences,
                                    PagedKVCache& cache) const {
  profiler::Scope scope(ctx, "forward", "step");
  const ModelConfig& shape = config();
  const PagedKVCache::Geometry& found = cache.geometry();
  const PagedKVCache::Geometry expected = kv_geometry(cache.block_tokens(), found.dtype);
  check(found.layers == expected.layers && found.kv_heads == expected.kv_heads &&
            found.head_dim == expected.head_dim,
        "forward", "the paged cache was made for another model's shape");
  check(!sequences.empty(), "forward", "a step needs at least one sequence");
  const std::int64_t block_tokens = cache.block_tokens();
  const std::int64_t pool_blocks = cache.pool().counters().blocks;
  std::size_t max_blocks = 0;
  for (const SequenceStep& s : sequences) max_blocks = std::max(max_blocks, s.blocks.size());

  // Host tables: ids, positions and slots per token; starts, lengths and block tables per sequence.
  ops::attention::RaggedBatch batch;
  batch.block_tokens = block_tokens;
  batch.max_blocks = static_cast<std::int64_t>(max_blocks);
  batch.query_starts.push_back(0);
  batch.block_tables.assign(sequences.size() * max_blocks, 0);
  std::vector<std::int32_t> ids, positions, slots;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const SequenceStep& s = sequences[i];
    const auto new_tokens = static_cast<std::int64_t>(s.tokens.size());
    const std::int64_t kv_len = s.cached + new_tokens;
    check(new_tokens >= 1 && s.cached >= 0, "forward",
          [&] { return "sequence " + std::to_string(i) + " of the step has no new tokens"; });
    check(kv_len <= shape.context_length, "forward", [&] {
      return "sequence " + std::to_string(i) + " reaches " + std::to_string(kv_len) +
             " tokens, past the model's context length of " + std::to_string(shape.context_length);
    });
    check(static_cast<std::int64_t>(s.blocks.size()) * block_tokens >= kv_len, "forward", [&] {
      return "sequence " + std::to_string(i) + "'s " + std::to_string(s.blocks.size()) +
             " blocks do not hold its " + std::to_string(kv_len) + " positions";
    });
    for (std::size_t b = 0; b < s.blocks.size(); ++b) {
      check(0 <= s.blocks[b] && s.blocks[b] < pool_blocks, "forward", [&] {
        return "block " + std::to_string(s.blocks[b]) + " is outside the pool's " +
               std::to_string(pool_blocks);
      });
      batch.block_tables[i * max_blocks + b] = static_cast<std::int32_t>(s.blocks[b]);
    }
    for (std::int64_t t = 0; t < new_tokens; ++t) {
      const std::int64_t position = s.cached + t;
      ids.push_back(s.tokens[static_cast<std::size_t>(t)]);
      positions.push_back(static_cast<std::int32_t>(position));
      slots.push_back(static_cast<std::int32_t>(
          s.blocks[static_cast<std::size_t>(position / block_tokens)] * block_tokens +
          position % block_tokens));
    }
    batch.query_starts.push_back(static_cast<std::int32_t>(ids.size()));
    batch.kv_lens.push_back(static_cast<std::int32_t>(kv_len));
  }
  check_token_ids(ids, shape.vocab_size);

  std::vector<Tensor> uploaded = upload_arrays(
      ctx, {ids, positions, slots, batch.query_starts, batch.kv_lens, batch.block_tables});
  if (ctx.device() != Device::CPU) {
    batch.device_query_starts = uploaded[3];
    batch.device_kv_lens = uploaded[4];
    batch.device_block_tables = uploaded[5];
  }
  std::vector<std::int64_t> logit_rows;
  for (std::size_t i = 1; i < batch.query_starts.size(); ++i) {
    logit_rows.push_back(batch.query_starts[i] - 1);
  }
  if (logit_rows.size() == ids.size()) logit_rows.clear();  // one token each: every row
  const PagedStep paged{cache, std::move(batch), uploaded[2]};
  const StepInputs inputs{uploaded[0], uploaded[1]};
  const StepKv kv{inputs.positions, nullptr, 0, 0, &paged, Tensor()};
  return run_step(ctx, inputs, kv, logit_rows);
}

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The rows of `hidden` [N, width] whose logits a step returns: all of them when `rows` is empty,
// else those rows, copied into a [rows, width] tensor (only these go through the final norm and
// the LM head).
Tensor rows_for_logits(Context& ctx, const Tensor& hidden, std::span<const std::int64_t> rows) {
  if (rows.empty()) return hidden;
  const auto count = static_cast<std::int64_t>(rows.size());
  Tensor kept = Tensor::empty({count, hidden.dim(1)}, hidden.dtype(), ctx.allocator());
  for (std::int64_t i = 0; i < count; ++i) {
    Tensor row = kept.slice_rows(i, i + 1);
    const std::int64_t from = rows[static_cast<std::size_t>(i)];
    copy_into(ctx, hidden.slice_rows(from, from + 1), row);
  }
  return kept;
}

}  // namespace

Tensor LanguageModel::run_step(Context& ctx, const StepInputs& inputs, const StepKv& kv,
                               std::span<const std::int64_t> logit_rows) const {
  Tensor hidden = embed(ctx, inputs, step_tables());
  for (std::int64_t i = 0; i < config().n_layers; ++i) {
    profiler::Scope layer_scope(ctx, "layer", "layer");
    layer_scope.set_index(i);
    {
      profiler::Scope block_scope(ctx, "attention_block", "block");
      attention_block(ctx, i, hidden, kv);
    }
    {
      profiler::Scope block_scope(ctx, "mlp_block", "block");
      mlp_block(ctx, i, hidden);
    }
    if (AttentionTap* tap = ctx.attention_tap()) tap->layer_output(ctx, i, hidden);
  }
  // Only the rows whose logits are wanted go through the final norm and the LM head.
  return logits_of_hidden(ctx, rows_for_logits(ctx, hidden, logit_rows));
}

Tensor LanguageModel::logits_of_hidden(Context& ctx, const Tensor& hidden) const {
  Tensor normed = Tensor::empty(hidden.shape(), dtypes_.activations, ctx.allocator());
  final_norm(ctx, hidden, normed);
  return lm_head_logits(ctx, normed, step_tables().lm_head);
}

Tensor LanguageModel::embed(Context& ctx, const StepInputs& inputs,
                            const StepTables& tables) const {
  Tensor hidden =
      Tensor::empty({inputs.ids.dim(0), config().d_model}, dtypes_.activations, ctx.allocator());
  ops::embedding(ctx, tables.token_embedding, tables.position_embedding, inputs.ids,
                 inputs.positions, hidden);
  return hidden;
}

ops::attention::Shape LanguageModel::attention_shape(std::int64_t batch, std::int64_t q_len,
                                                     std::int64_t kv_len) const {
  ops::attention::Shape shape{batch,  config().n_heads,  config().n_kv_heads, q_len,
                              kv_len, config().head_dim, dtypes_.activations};
  // Weights stored in bf16: q, k, v and p may be too (their precision on the GPU and in PyTorch),
  // as bf16 weights let the linear layers round x (ops/cpu/output_blocks.h).
  shape.bf16_products = dtypes_.weights == DType::BF16;
  return shape;
}

Tensor LanguageModel::attend(Context& ctx, std::int64_t layer_index, Tensor& qkv,
                             const AttentionHeads& heads, const StepKv& kv) const {
  if (heads.rotary != nullptr) {
    ops::rotary_embedding_(ctx, qkv, heads.q_heads + heads.kv_heads, kv.positions, *heads.rotary);
  }
  const std::int64_t rows = qkv.dim(0);
  const std::int64_t width = heads.q_heads * heads.head_dim;
  if (kv.paged != nullptr) {
    ops::attention::PagedCall call;
    call.q =
        Tensor::empty({rows, heads.q_heads, heads.head_dim}, dtypes_.activations, ctx.allocator());
    call.key_blocks = kv.paged->cache.key_blocks(layer_index);
    call.value_blocks = kv.paged->cache.value_blocks(layer_index);
    call.out = Tensor::empty(call.q.shape(), dtypes_.activations, ctx.allocator());
    call.batch = &kv.paged->batch;
    call.scale = heads.scale;
    call.bf16_products = attention_shape(1, rows, rows).bf16_products;
    ops::split_qkv_paged(ctx, qkv, call.q, call.key_blocks, call.value_blocks, kv.paged->slots);
    attention_->attend_paged(ctx, call);
    return call.out.reshape({rows, width});  // token-major already
  }
  KVCache& cache = *kv.cache;
  ops::attention::Call call;
  call.q = Tensor::empty({kv.batch, heads.q_heads, kv.tokens, heads.head_dim}, dtypes_.activations,
                         ctx.allocator());
  call.k = cache.keys(layer_index);
  call.v = cache.values(layer_index);
  call.kv_len = cache.length() + kv.tokens;
  if (kv.kv_lens.defined()) {  // a replayed step: each row's count on the device, bounded here
    call.kv_len = cache.capacity();
    call.kv_lens = kv.kv_lens;
  }
  call.scale = heads.scale;
  call.bf16_products = attention_shape(kv.batch, kv.tokens, call.kv_len).bf16_products;
  ops::split_qkv(ctx, qkv.reshape({kv.batch, kv.tokens, qkv.dim(1)}), call.q, call.k, call.v,
                 kv.positions);
  call.out = Tensor::empty(call.q.shape(), dtypes_.activations, ctx.allocator());
  attention_->attend(ctx, call);
  if (AttentionTap* tap = ctx.attention_tap()) {
    tap->attention(ctx, {layer_index, call.q, call.k, call.v, call.kv_len, call.scale, call.out});
  }
  if (kv.tokens == 1) return call.out.reshape({rows, width});
  Tensor merged = Tensor::empty({kv.batch, kv.tokens, width}, dtypes_.activations, ctx.allocator());
  ops::merge_heads(ctx, call.out, merged);
  return merged.reshape({rows, width});
}

Tensor LanguageModel::lm_head_logits(Context& ctx, const Tensor& normed,
                                     const Tensor& lm_head) const {
  Tensor logits = Tensor::empty({normed.dim(0), lm_head.dim(0)}, DType::F32, ctx.allocator());
  ops::linear(ctx, normed, lm_head, Tensor(), logits);
  return logits;
}

std::string synthetic_model_names() {
  std::string valid;
  for (const auto& names : {gpt2::synthetic_names(), llama::synthetic_names()}) {
    for (const std::string& n : names) valid += (valid.empty() ? "" : ", ") + n;
  }
  return valid;
}

ModelFamily model_family(const std::string& spec) {
  if (const std::optional<std::string> name = synthetic_name(spec)) {
    if (contains(gpt2::synthetic_names(), *name)) return ModelFamily::Gpt2;
    if (contains(llama::synthetic_names(), *name)) return ModelFamily::Llama;
    throw Error("--model",
                "unknown synthetic model '" + *name + "' (valid: " + synthetic_model_names() + ")");
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
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3") {
    return ModelFamily::Llama;
  }
  throw Error(label, "unsupported model_type " + single_quoted(type) +
                         " (supported: gpt2, llama, mistral, qwen2, qwen3)");
}

std::unique_ptr<LanguageModel> open_model(const std::string& spec, Context& ctx,
                                          std::uint64_t synthetic_seed, DType dtype) {
  if (model_family(spec) == ModelFamily::Llama) {
    return std::make_unique<llama::Model>(llama::Model::open(spec, ctx, synthetic_seed, dtype));
  }
  return std::make_unique<gpt2::Model>(gpt2::Model::open(spec, ctx, synthetic_seed, dtype));
}

}  // namespace attnscope
