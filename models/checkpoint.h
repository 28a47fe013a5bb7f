// What every model family's loader shares: the dtypes a model is stored in, finding a checkpoint
// on disk, the tensors as the checkpoint stores them, and placing the weights on the device.
//
// A family (models/gpt2/, models/llama/) knows its own tensors: their names, shapes and layout.
// How they reach the device is the same for all of them: read in f32 on the host, each matrix
// narrowed to the weight dtype and every other tensor to the activation dtype, one tensor at a
// time, so that peak memory is the f32 model and the placed one; on a GPU each is copied to the
// device, on the CPU into one block of memory on huge pages (place_weights).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/context.h"
#include "runtime/safetensors_index.h"
#include "runtime/tensor.h"

namespace attnscope {

// The dtypes a model is stored and computed in, from the one --dtype a user asks for.
//  - cuda: weights, activations and the KV cache are all stored in it (math accumulates in f32).
//  - cpu: it is the storage dtype of the matrices only (the linear weights and the token
//    embedding, which a tied LM head shares): they are what a decode step reads, so 16 bits
//    halve its memory traffic, and q8_0 (blocks of 32 int8 values sharing an f16 scale,
//    runtime/q8_0.h) cuts it to 34/32 bytes per weight. Activations, biases, norms, a position
//    embedding, the KV cache and the logits stay f32, because the cpu kernels compute on f32
//    activations.
struct ModelDTypes {
  DType activations = DType::F32;
  DType weights = DType::F32;
};
// Throws Error for i32, and for q8_0 on cuda (q8_0 runs on the cpu only).
ModelDTypes model_dtypes(Device device, DType requested);

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
// Every tensor of `file`, as stored.
std::vector<StoredTensor> stored_tensors(const SafetensorsCheckpoint& file);

// NAME when `spec` is "synthetic:NAME" (seeded random weights of a known shape), else nothing.
std::optional<std::string> synthetic_name(const std::string& spec);

// A model's parameters ready to compute with: its config, the dtypes its weights were converted
// to, its weights on the context's device, and the tensors as the checkpoint stores them. Each
// family names its own (gpt2::Checkpoint, llama::Checkpoint).
template <typename Config, typename Weights>
struct ModelCheckpoint {
  Config config;
  ModelDTypes dtypes;  // what the weights were converted to
  Weights weights;
  std::vector<StoredTensor> stored;
};

// Reads a family's tensors out of a checkpoint file by name, checking that each is there with the
// shape the config gives it, and remembers the names it read so that refuse_unread can reject a
// checkpoint with tensors the model does not have.
class CheckedTensorReader {
 public:
  explicit CheckedTensorReader(const SafetensorsCheckpoint& file) : file_(file) {}
  // The tensor `name` as stored (any dtype). Throws Error when it is missing or not of `shape`.
  Tensor read(const std::string& name, const Shape& shape);
  // Throws Error for the first tensor of the file that was not read and that `ignored` does not
  // accept, as "not part of a `family` model with this config".
  void refuse_unread(std::string_view family,
                     const std::function<bool(const std::string& name)>& ignored) const;

 private:
  const SafetensorsCheckpoint& file_;
  std::set<std::string, std::less<>> read_;
};

// The family's functions that read_checkpoint (below) reads a model through.
template <typename Config, typename Weights>
struct CheckpointReaders {
  Config (*synthetic_config)(const std::string& name);
  Weights (*synthetic_weights)(const Config& config, std::uint64_t seed, Allocator& allocator,
                               int threads);
  std::vector<StoredTensor> (*synthetic_tensor_list)(const Config& config);
  Config (*read_config)(const std::string& config_json_path);
  Weights (*load_weights)(const SafetensorsCheckpoint& file, const Config& config,
                          Allocator& allocator, int threads);
};

// The checkpoint file inside `spec`: a directory's model.safetensors, else its sharded
// model.safetensors.index.json, or `spec` itself when it is a file. Pickle checkpoints
// (pytorch_model.bin) are refused with instructions to convert them, because loading one can run
// arbitrary code. Throws Error when nothing is found.
std::filesystem::path find_checkpoint(const std::filesystem::path& spec);

// Where weights are read in f32 before they are placed: on the CPU their final allocator, on a
// GPU the host allocator.
Allocator& staging_allocator(Context& ctx);

// Replaces `t` by its conversion to `dtype` (on the host) placed on ctx's device; the original is
// freed once nothing else holds it.
void place_tensor(Context& ctx, Tensor& t, DType dtype);

// One tensor of a model to place, and whether it is a matrix (stored in the weight dtype; every
// other tensor is stored in the activation dtype).
struct Placement {
  Tensor* tensor = nullptr;
  bool matrix = false;
};
// Places every tensor of `tensors` (which include the token embedding) and the LM head: a head
// tied to the token embedding stays that one tensor (one copy, not two), an untied one is a
// matrix. On a GPU each goes through place_tensor; on the CPU all of them move, converted, into
// one allocation starting on a 2 MiB page and advised for huge pages, which the weights stream
// through on every step (runtime/allocator.h), each tensor a view of it.
void place_weights(Context& ctx, std::span<const Placement> tensors, const Tensor& token_embedding,
                   Tensor& lm_head, ModelDTypes dtypes);

// The first half of every family's load_checkpoint: the dtypes for ctx's device and `dtype`, then
// the config, f32 weights (in staging_allocator(ctx)) and stored tensors either of the synthetic
// model `spec` names or of the checkpoint find_checkpoint finds there (config.json beside it).
// The family then checks its row widths and places the weights.
template <typename Config, typename Weights>
ModelCheckpoint<Config, Weights> read_checkpoint(const std::string& spec, Context& ctx,
                                                 std::uint64_t synthetic_seed, DType dtype,
                                                 const CheckpointReaders<Config, Weights>& read) {
  ModelCheckpoint<Config, Weights> checkpoint;
  checkpoint.dtypes = model_dtypes(ctx.device(), dtype);
  Allocator& staging = staging_allocator(ctx);
  if (const std::optional<std::string> name = synthetic_name(spec)) {
    checkpoint.config = read.synthetic_config(*name);
    checkpoint.weights =
        read.synthetic_weights(checkpoint.config, synthetic_seed, staging, ctx.threads());
    checkpoint.stored = read.synthetic_tensor_list(checkpoint.config);
  } else {
    const std::filesystem::path checkpoint_file = find_checkpoint(spec);
    checkpoint.config = read.read_config((checkpoint_file.parent_path() / "config.json").string());
    const SafetensorsCheckpoint file = SafetensorsCheckpoint::open(checkpoint_file.string());
    checkpoint.weights = read.load_weights(file, checkpoint.config, staging, ctx.threads());
    checkpoint.stored = stored_tensors(file);
  }
  return checkpoint;
}

}  // namespace attnscope
