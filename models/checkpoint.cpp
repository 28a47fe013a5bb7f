// The loader pieces every model family shares (models/checkpoint.h).
//
// Cost: placing converts each tensor once on the host and copies it to the device once; the rest
// is bookkeeping.
#include "models/checkpoint.h"

#include <vector>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/q8_0.h"
#include "runtime/transfer.h"

namespace attnscope {

namespace {

constexpr std::string_view kSyntheticPrefix = "synthetic:";

// The cpu's place_weights: every tensor converted to its dtype into its view of one block on
// huge pages (empty_on_huge_pages, runtime/tensor.h). The originals are freed one by one as their
// views replace them, so the memory in use peaks at the f32 tensors plus the pages of the block
// written so far. Measured (2-core Xeon with AVX-512, synthetic:gpt2 and synthetic:smollm2-135m
// tg64, 3 interleaved rounds, docs/results/2026-12-03-decode-huge-pages): batch-1 decode
// 1.02-1.31x at every weight type against each tensor in an allocation of its own, on small pages.
template <typename DTypeOf>
void place_in_one_host_block(Allocator& allocator, std::span<const Placement> tensors,
                             DTypeOf dtype_of) {
  std::vector<TensorSpec> specs;
  for (const Placement& p : tensors) specs.push_back({p.tensor->shape(), dtype_of(p)});
  std::vector<Tensor> placed = empty_on_huge_pages(specs, allocator);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    Tensor& original = *tensors[i].tensor;
    convert_elements(original.raw_data(), original.dtype(), placed[i].raw_data(), specs[i].dtype,
                     static_cast<std::size_t>(original.numel()));
    original = std::move(placed[i]);
  }
}

}  // namespace

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

std::vector<StoredTensor> stored_tensors(const SafetensorsCheckpoint& file) {
  std::vector<StoredTensor> stored;
  for (const SafetensorsEntry& e : file.entries()) {
    stored.push_back({e.name, e.dtype, e.shape, e.end - e.begin});
  }
  return stored;
}

std::optional<std::string> synthetic_name(const std::string& spec) {
  if (!spec.starts_with(kSyntheticPrefix)) return std::nullopt;
  return spec.substr(kSyntheticPrefix.size());
}

std::filesystem::path find_checkpoint(const std::filesystem::path& spec) {
  namespace fs = std::filesystem;
  check(fs::exists(spec), spec.string(), "no such file or directory");
  const std::string pickle_help =
      ": pickle checkpoints (pytorch_model.bin) are refused because loading them can run "
      "arbitrary code; convert it to model.safetensors with python: "
      "transformers.AutoModelForCausalLM.from_pretrained(DIR)"
      ".save_pretrained(DIR, safe_serialization=True)";
  if (!fs::is_directory(spec)) {
    if (spec.extension() == ".bin") throw Error(spec.string() + pickle_help);
    return spec;
  }
  for (const char* name : {"model.safetensors", "model.safetensors.index.json"}) {
    if (fs::exists(spec / name)) return model_folder_file(spec, name);  // the symlink policy
  }
  for (const char* name : {"pytorch_model.bin", "pytorch_model.bin.index.json"}) {
    if (fs::exists(spec / name)) throw Error((spec / name).string() + pickle_help);
  }
  throw Error(spec.string(), "no model.safetensors (or model.safetensors.index.json) here");
}

Allocator& staging_allocator(Context& ctx) {
  return ctx.device() == Device::CPU ? ctx.allocator() : ctx.host_allocator();
}

void place_tensor(Context& ctx, Tensor& t, DType dtype) {
  const Tensor converted = t.dtype() == dtype ? t : t.to_dtype(dtype, staging_allocator(ctx));
  t = ctx.device() == Device::CPU ? converted : to_device(ctx, converted);
}

void place_weights(Context& ctx, std::span<const Placement> tensors, const Tensor& token_embedding,
                   Tensor& lm_head, ModelDTypes dtypes) {
  const bool tied = lm_head.raw_data() == token_embedding.raw_data();
  std::vector<Placement> all(tensors.begin(), tensors.end());
  if (!tied) all.push_back({&lm_head, true});
  const auto dtype_of = [&](const Placement& p) {
    return p.matrix ? dtypes.weights : dtypes.activations;
  };
  if (ctx.device() == Device::CPU) {
    place_in_one_host_block(ctx.allocator(), all, dtype_of);
  } else {
    for (const Placement& p : all) place_tensor(ctx, *p.tensor, dtype_of(p));
    ctx.synchronize();
  }
  if (tied) lm_head = token_embedding;  // the placed embedding
}

Tensor CheckedTensorReader::read(const std::string& name, const Shape& shape) {
  const SafetensorsEntry* entry = file_.find(name);
  check(entry != nullptr, file_.label(), "missing tensor '" + name + "'");
  check(entry->shape == shape, file_.label(),
        "tensor '" + name + "': expected shape " + shape_string(shape) + ", found " +
            shape_string(entry->shape));
  read_.insert(name);
  return file_.tensor(name);
}

void CheckedTensorReader::refuse_unread(
    std::string_view family, const std::function<bool(const std::string& name)>& ignored) const {
  for (const SafetensorsEntry& e : file_.entries()) {
    check(read_.contains(e.name) || ignored(e.name), file_.label(),
          "unexpected tensor '" + e.name + "' (not part of a " + std::string(family) +
              " model with this config)");
  }
}

}  // namespace attnscope
