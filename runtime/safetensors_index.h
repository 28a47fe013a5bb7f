// A checkpoint's tensors, from one safetensors file or sharded across several (as larger models
// are published): model.safetensors.index.json names the shard of every tensor,
//
//   {"metadata": {"total_size": ...}, "weight_map": {"h.0.attn.c_attn.weight":
//                                                    "model-00001-of-00002.safetensors", ...}}
//
// and each shard is an ordinary safetensors file beside it, memory-mapped and validated as one
// (runtime/safetensors.h). The index is checked like a file header: valid JSON without duplicate
// keys (so no tensor is listed twice), a weight_map of plain file names in the index's folder,
// every listed tensor present in its shard and every tensor of a shard listed there. Shapes and
// dtypes are the shards' own; the model loader checks them against the config.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/safetensors.h"

namespace attnscope {

class SafetensorsCheckpoint {
 public:
  // `path` is a .safetensors file or a .safetensors.index.json; throws Error naming the file
  // and the problem.
  static SafetensorsCheckpoint open(const std::string& path);
  // Parses index text; `folder` holds the shards, `label` names the index in errors.
  static SafetensorsCheckpoint open_index(std::string_view index_text, const std::string& folder,
                                          const std::string& label);

  // The single file, or the index.
  const std::string& label() const { return label_; }
  std::size_t shard_count() const { return shards_.size(); }
  // Every tensor of every shard, sorted by name (begin/end are offsets within its shard).
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const SafetensorsEntry* find(std::string_view name) const;
  // A CPU view into the mapping of the tensor's shard (see SafetensorsFile::tensor).
  Tensor tensor(std::string_view name) const;

 private:
  std::string label_;
  std::vector<SafetensorsFile> shards_;
  std::vector<SafetensorsEntry> entries_;
  std::vector<std::size_t> shard_of_entry_;  // parallel to entries_
};

}  // namespace attnscope
