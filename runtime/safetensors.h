// Reader for the safetensors format (Hugging Face's tensor file).
//
// Layout: an 8-byte little-endian header length N, then N bytes of JSON, then the data section.
// The JSON maps each tensor name to {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}
// (offsets relative to the data section) plus an optional "__metadata__" string map.
//
// The file is memory-mapped, never copied: tensors are views into the mapping. Everything read
// from the file is checked before use, because model loaders are an attack surface: header
// length inside the file and of sane size, valid JSON with no duplicate keys, known dtypes,
// shapes whose element counts do not overflow, byte ranges equal to element count x dtype size,
// inside the data section and not overlapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tensor.h"

namespace attnscope {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as spelled in the file: "F32", "F16", "BF16", "I64", "U8", ...
  Shape shape;
  std::uint64_t begin = 0;  // byte range [begin, end) in the data section
  std::uint64_t end = 0;
};

// The entry named `name` in `entries` sorted by name (binary search), or nullptr.
const SafetensorsEntry* find_entry(const std::vector<SafetensorsEntry>& entries,
                                   std::string_view name);

class SafetensorsFile {
 public:
  // Maps and validates `path`; throws Error naming the file and the problem.
  static SafetensorsFile open(const std::string& path);
  // Validates bytes already in memory; `keep_alive` owns them. `label` names them in errors.
  static SafetensorsFile parse(std::shared_ptr<const void> keep_alive, const std::uint8_t* bytes,
                               std::size_t size, const std::string& label);

  const std::string& label() const { return label_; }
  // Sorted by name.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const SafetensorsEntry* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // A CPU view of a floating-point tensor (F32, F16 or BF16) sharing the mapping. Throws Error
  // when the name is missing or the dtype is not one attnscope computes with.
  Tensor tensor(std::string_view name) const;

 private:
  std::string label_;
  std::shared_ptr<const void> keep_alive_;
  const std::uint8_t* data_section_ = nullptr;
  std::uint64_t data_section_offset_ = 0;  // 8 + header length, for messages
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace attnscope
