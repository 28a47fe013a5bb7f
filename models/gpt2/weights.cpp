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
#include <set>
#include <string_view>

#include "models/gpt2/tensor_map.h"
#include "runtime/error.h"
#include "runtime/q8_0.h"
#include "runtime/transfer.h"

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

constexpr std::string_view kSyntheticPrefix = "synthetic:";

// The checkpoint file inside `spec` (a directory, the .safetensors file itself, or a sharded
// checkpoint's .index.json). A directory's model.safetensors wins over an index beside it.
std::filesystem::path find_checkpoint(const std::filesystem::path& spec) {
  namespace fs = std::filesystem;
  check(fs::exists(spec), spec.string(), "no such file or directory");
  const std::string pickle_help =
      ": pickle checkpoints (pytorch_model.bin) are refused because loading them can run "
      "arbitrary code; convert it to model.safetensors with python: "
      "transformers.GPT2LMHeadModel.from_pretrained(DIR)"
      ".save_pretrained(DIR, safe_serialization=True)";
  if (!fs::is_directory(spec)) {
    if (spec.extension() == ".bin") throw Error(spec.string() + pickle_help);
    return spec;
  }
  for (const char* name : {"model.safetensors", "model.safetensors.index.json"}) {
    if (fs::exists(spec / name)) return spec / name;
  }
  for (const char* name : {"pytorch_model.bin", "pytorch_model.bin.index.json"}) {
    if (fs::exists(spec / name)) throw Error((spec / name).string() + pickle_help);
  }
  throw Error(spec.string(), "no model.safetensors (or model.safetensors.index.json) here");
}

// Converts every tensor to its dtype in `dtypes` (matrices to the weight dtype, the rest to the
// activation dtype) on the host, then copies it to ctx's device. The tied LM head stays the token
// embedding (one copy, not two). Each f32 original is freed as soon as its copy replaces it.
void place_weights(const ModelConfig& config, Weights& weights, Context& ctx, ModelDTypes dtypes) {
  const bool tied = weights.lm_head.raw_data() == weights.token_embedding.raw_data();
  auto place = [&](Tensor& t, DType dtype) { place_tensor(ctx, t, dtype); };
  for (const TensorSlot& slot : tensor_slots(config, weights)) {
    place(*slot.destination, slot.matrix ? dtypes.weights : dtypes.activations);
  }
  if (tied) {
    weights.lm_head = weights.token_embedding;
  } else {
    place(weights.lm_head, dtypes.weights);
  }
  ctx.synchronize();
}

}  // namespace

void place_tensor(Context& ctx, Tensor& t, DType dtype) {
  Allocator& staging = ctx.device() == Device::CPU ? ctx.allocator() : ctx.host_allocator();
  const Tensor converted = t.dtype() == dtype ? t : t.to_dtype(dtype, staging);
  t = ctx.device() == Device::CPU ? converted : to_device(ctx, converted);
}

ModelDTypes model_dtypes(Device device, DType requested) {
  check(requested != DType::I32, "--dtype", "i32 is not a model dtype");
  check(!(device == Device::CUDA && requested == DType::Q8_0), "--dtype",
        "q8_0 runs on the cpu only (on cuda use f32, f16 or bf16)");
  if (device == Device::CUDA) return {requested, requested};
  return {DType::F32, requested};
}

void check_weight_dtype_fits(std::initializer_list<RowWidth> row_widths, DType weights) {
  if (weights != DType::Q8_0) return;
  for (const RowWidth& row : row_widths) {
    check(row.width % kQ8_0BlockElements == 0, "--dtype", [&] {
      return "q8_0 quantizes rows in blocks of " + std::to_string(kQ8_0BlockElements) +
             " values, but this model's " + std::string(row.name) + " is " +
             std::to_string(row.width) + " (use f32, f16 or bf16)";
    });
  }
}

Checkpoint load_checkpoint(const std::string& spec, Context& ctx, std::uint64_t synthetic_seed,
                           DType dtype) {
  const ModelDTypes dtypes = model_dtypes(ctx.device(), dtype);
  Checkpoint checkpoint;
  checkpoint.dtypes = dtypes;
  // Weights are read in f32 on the host (straight into their final place on the CPU).
  Allocator& staging = ctx.device() == Device::CPU ? ctx.allocator() : ctx.host_allocator();
  if (spec.starts_with(kSyntheticPrefix)) {
    const std::string name = spec.substr(kSyntheticPrefix.size());
    checkpoint.config = synthetic_config(name);
    checkpoint.weights =
        synthetic_weights(checkpoint.config, synthetic_seed, staging, ctx.threads());
    checkpoint.stored = synthetic_tensor_list(checkpoint.config);
  } else {
    const std::filesystem::path checkpoint_file = find_checkpoint(spec);
    checkpoint.config = read_model_config((checkpoint_file.parent_path() / "config.json").string());
    const SafetensorsCheckpoint file = SafetensorsCheckpoint::open(checkpoint_file.string());
    checkpoint.weights = load_weights(file, checkpoint.config, staging, ctx.threads());
    for (const SafetensorsEntry& e : file.entries()) {
      checkpoint.stored.push_back({e.name, e.dtype, e.shape, e.end - e.begin});
    }
  }
  // Every matrix row is d_model (qkv, attn out, mlp up, token embedding) or d_ff (mlp down) wide.
  check_weight_dtype_fits(
      {{"n_embd", checkpoint.config.d_model}, {"n_inner", checkpoint.config.d_ff}}, dtypes.weights);
  if (ctx.device() != Device::CPU || dtypes.weights != DType::F32) {
    place_weights(checkpoint.config, checkpoint.weights, ctx, dtypes);
  }
  return checkpoint;
}

Weights load_weights(const SafetensorsCheckpoint& file, const ModelConfig& config,
                     Allocator& allocator, int threads) {
  Weights weights;
  const std::vector<TensorSlot> slots = tensor_slots(config, weights);
  bool prefixed = false;
  for (const SafetensorsEntry& e : file.entries()) prefixed |= e.name.starts_with(kPrefix);

  std::set<std::string, std::less<>> used;
  auto load = [&](const std::string& key, const Shape& shape, bool transpose) {
    const SafetensorsEntry* entry = file.find(key);
    check(entry != nullptr, file.label(), "missing tensor '" + key + "'");
    check(entry->shape == shape, file.label(),
          "tensor '" + key + "': expected shape " + shape_string(shape) + ", found " +
              shape_string(entry->shape));
    used.insert(key);
    return to_f32(file.tensor(key), transpose, allocator, threads);
  };
  for (const TensorSlot& slot : slots) {
    const std::string key = prefixed ? std::string(kPrefix) + slot.name : slot.name;
    *slot.destination = load(key, slot.stored_shape, slot.transpose);
  }
  weights.lm_head = file.find("lm_head.weight")
                        ? load("lm_head.weight", {config.vocab_size, config.d_model}, false)
                        : weights.token_embedding;

  for (const SafetensorsEntry& e : file.entries()) {
    check(used.contains(e.name) || is_legacy_buffer(e.name), file.label(),
          "unexpected tensor '" + e.name + "' (not part of a GPT-2 model with this config)");
  }
  return weights;
}

}  // namespace attnscope::gpt2
