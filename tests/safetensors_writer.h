// Builds safetensors files in memory for tests.
//
// Format written: u64 little-endian header length N, N bytes of JSON header, data section. The
// header is padded with spaces to a multiple of 8 bytes (as Hugging Face's writer does) and each
// tensor starts at a multiple of its element size, so every view is aligned. Tensors are laid
// out in the order they are added. For malformed files, with_header() wraps any header text and
// with_declared_length() writes any length prefix. Nothing here is checked: that is the reader's
// job. Cost: a copy of every tensor's bytes.
//
//   SafetensorsWriter writer;
//   writer.add_f32("wte.weight", {2, 3}, {1, 2, 3, 4, 5, 6});
//   writer.add("ids", "I64", {2}, bytes_of(std::vector<std::int64_t>{7, 8}));
//   writer.add_metadata("format", "pt");
//   write_file(path, writer.serialize());
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/safetensors.h"

namespace attnscope::testing {

// The raw bytes of a vector of trivially copyable values (host byte order: little-endian).
template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// `text` as a JSON string literal.
inline std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[7];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The 8-byte little-endian length prefix.
inline std::string length_prefix(std::uint64_t length) {
  std::string prefix(8, '\0');
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return prefix;
}

class SafetensorsWriter {
 public:
  // Adds a tensor of any dtype name, holding exactly `bytes`.
  void add(std::string name, std::string dtype, Shape shape, std::string bytes) {
    const std::size_t alignment = element_size(dtype);
    data_.resize((data_.size() + alignment - 1) / alignment * alignment, '\0');
    const std::size_t begin = data_.size();
    data_ += bytes;
    tensors_.push_back({std::move(name), std::move(dtype), std::move(shape), begin, data_.size()});
  }
  void add_f32(std::string name, Shape shape, const std::vector<float>& values) {
    add(std::move(name), "F32", std::move(shape), bytes_of(values));
  }
  void add_metadata(std::string key, std::string value) {
    metadata_.emplace_back(std::move(key), std::move(value));
  }
  // Bytes appended after the last tensor, referenced by no entry.
  void add_trailing_bytes(std::size_t count) { data_.append(count, '\0'); }

  // The JSON header, padded with spaces to a multiple of 8 bytes.
  std::string header_json() const {
    std::string header = "{";
    if (!metadata_.empty()) {
      header += "\"__metadata__\":{";
      for (std::size_t i = 0; i < metadata_.size(); ++i) {
        if (i) header += ",";
        header += json_string(metadata_[i].first) + ":" + json_string(metadata_[i].second);
      }
      header += "}";
    }
    for (const Entry& tensor : tensors_) {
      if (header.size() > 1) header += ",";
      header +=
          json_string(tensor.name) + ":{\"dtype\":" + json_string(tensor.dtype) + ",\"shape\":[";
      for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
        if (i) header += ",";
        header += std::to_string(tensor.shape[i]);
      }
      header += "],\"data_offsets\":[" + std::to_string(tensor.begin) + "," +
                std::to_string(tensor.end) + "]}";
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    return header;
  }
  // The data section as laid out so far.
  const std::string& data() const { return data_; }

  // The whole file.
  std::string serialize() const { return with_header(header_json(), data_); }

  // A file made of any header text (its length is written exactly) and data section.
  static std::string with_header(std::string_view header, std::string_view data = {}) {
    return length_prefix(header.size()) + std::string(header) + std::string(data);
  }
  // A file whose length prefix says `declared_length`, followed by `rest` as is.
  static std::string with_declared_length(std::uint64_t declared_length,
                                          std::string_view rest = {}) {
    return length_prefix(declared_length) + std::string(rest);
  }

 private:
  struct Entry {
    std::string name;
    std::string dtype;
    Shape shape;
    std::size_t begin;
    std::size_t end;
  };

  // Element size of a safetensors dtype name; 1 for names it does not know (malformed tests).
  static std::size_t element_size(std::string_view dtype) {
    if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
    if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
    return 1;
  }

  std::vector<Entry> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::string data_;
};

// Parses bytes held in memory; the returned file keeps its own copy of them alive.
inline SafetensorsFile parse_safetensors(std::string bytes, const std::string& label) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  return SafetensorsFile::parse(owned, reinterpret_cast<const std::uint8_t*>(owned->data()),
                                owned->size(), label);
}

inline void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) throw std::runtime_error("cannot write test file " + path);
}

// A fresh directory under the system temp directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "attnscope-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside the directory.
  std::string file(std::string_view name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace attnscope::testing
