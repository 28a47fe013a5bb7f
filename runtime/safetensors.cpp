// Reader for safetensors files: maps the file, then checks every header field before use.
//
// Format: u64 little-endian header length N | N bytes of JSON | data section. Checked: the file
// holds the 8-byte length; N is at most 100 MiB and inside the file; the header is valid UTF-8
// JSON without NUL bytes, an object, with no duplicate key at any depth; each entry has exactly
// "dtype" (a known name), "shape" (non-negative integers whose product does not overflow) and
// "data_offsets" (begin <= end <= data section size, end - begin == element count x dtype size);
// the non-empty ranges do not overlap; "__metadata__" maps strings to strings. Bytes after the last
// tensor are allowed (writers pad). All offset arithmetic is in u64 and compared before it is done,
// so values near 2^64 cannot wrap.
//
// Cost: one pass over the JSON header plus a sort of the entries, O(n log n) in the number of
// tensors. The data section is never read here: tensors are views into the mapping.
//
// Alignment: the data section starts at byte 8 + N, so an f32 view is aligned only if the
// writer padded the header (Hugging Face's writer pads it to a multiple of 8 with spaces, and
// mmap returns page-aligned memory). tensor() checks the alignment of each view and refuses a
// misaligned one rather than handing out a pointer that kernels would read with undefined
// behaviour. The mapping is private and read-only; a file truncated by another process while
// mapped makes reads fault, which no check made at open time can prevent.

#include "runtime/safetensors.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"

namespace attnscope {
namespace {

using json = nlohmann::json;

constexpr std::uint64_t kLengthPrefixBytes = 8;
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{100} << 20;  // 100 MiB

struct DtypeSize {
  std::string_view name;
  std::uint64_t bytes;
};

// Every dtype the safetensors format defines.
constexpr std::array<DtypeSize, 15> kKnownDtypes = {{
    {"BOOL", 1},
    {"U8", 1},
    {"I8", 1},
    {"F8_E5M2", 1},
    {"F8_E4M3", 1},
    {"I16", 2},
    {"U16", 2},
    {"F16", 2},
    {"BF16", 2},
    {"I32", 4},
    {"U32", 4},
    {"F32", 4},
    {"F64", 8},
    {"I64", 8},
    {"U64", 8},
}};

std::optional<std::uint64_t> known_dtype_size(std::string_view name) {
  for (const DtypeSize& dtype : kKnownDtypes) {
    if (dtype.name == name) return dtype.bytes;
  }
  return std::nullopt;
}

std::string range_string(std::uint64_t begin, std::uint64_t end) {
  std::string range = "[";  // appended piece by piece: GCC 12 misreports "[" + std::string
  range += std::to_string(begin);
  range += ", ";
  range += std::to_string(end);
  return range + "]";
}

// A JSON integer >= 0, whether nlohmann stored it as signed or unsigned.
std::optional<std::uint64_t> as_non_negative_integer(const json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  }
  return std::nullopt;
}

const json& required_field(const json& entry, const char* key, const std::string& where) {
  const auto field = entry.find(key);
  check(field != entry.end(), where, std::string("missing \"") + key + "\"");
  return *field;
}

Shape read_shape(const json& shape, const std::string& where) {
  check(shape.is_array(), where, "\"shape\" must be an array of integers");
  Shape dims;
  for (const json& dim : shape) {
    const std::optional<std::uint64_t> value = as_non_negative_integer(dim);
    check(value.has_value(), where,
          "\"shape\" must hold non-negative integers, found " + json_excerpt(dim));
    check(*value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()), where,
          "dimension " + std::to_string(*value) + " is too large");
    dims.push_back(static_cast<std::int64_t>(*value));
  }
  return dims;
}

SafetensorsEntry read_entry(const std::string& name, const json& value,
                            std::uint64_t data_section_size, const std::string& label) {
  const std::string where = label + ": tensor " + single_quoted(name);
  check(value.is_object(), where, "entry is not a JSON object");
  for (const auto& field : value.items()) {
    check(field.key() == "dtype" || field.key() == "shape" || field.key() == "data_offsets", where,
          "unknown field " + single_quoted(field.key()));
  }

  SafetensorsEntry entry;
  entry.name = name;

  const json& dtype = required_field(value, "dtype", where);
  check(dtype.is_string(), where, "\"dtype\" must be a string");
  entry.dtype = dtype.get<std::string>();
  const std::optional<std::uint64_t> element_bytes = known_dtype_size(entry.dtype);
  check(element_bytes.has_value(), where, "unknown dtype " + single_quoted(entry.dtype));

  entry.shape = read_shape(required_field(value, "shape", where), where);
  std::int64_t numel = 0;
  try {
    numel = checked_numel(entry.shape);
  } catch (const Error& error) {
    throw Error(where, error.what());
  }
  check(static_cast<std::uint64_t>(numel) <=
            std::numeric_limits<std::uint64_t>::max() / *element_bytes,
        where,
        "shape " + shape_string(entry.shape) + " of " + entry.dtype + " overflows a byte count");
  const std::uint64_t needed_bytes = static_cast<std::uint64_t>(numel) * *element_bytes;

  const json& offsets = required_field(value, "data_offsets", where);
  check(offsets.is_array() && offsets.size() == 2, where,
        "\"data_offsets\" must be an array of two integers");
  const std::optional<std::uint64_t> begin = as_non_negative_integer(offsets[0]);
  const std::optional<std::uint64_t> end = as_non_negative_integer(offsets[1]);
  check(begin.has_value() && end.has_value(), where,
        "\"data_offsets\" must hold non-negative integers, found " + json_excerpt(offsets));
  entry.begin = *begin;
  entry.end = *end;

  check(entry.begin <= entry.end, where,
        "data_offsets " + range_string(entry.begin, entry.end) + ": begin is after end");
  check(entry.end <= data_section_size, where,
        "data_offsets " + range_string(entry.begin, entry.end) +
            " run past the end of the data section (" + std::to_string(data_section_size) +
            " bytes)");
  check(entry.end - entry.begin == needed_bytes, where,
        "data_offsets " + range_string(entry.begin, entry.end) + " hold " +
            std::to_string(entry.end - entry.begin) + " bytes but shape " +
            shape_string(entry.shape) + " of " + entry.dtype + " needs " +
            std::to_string(needed_bytes));
  return entry;
}

std::map<std::string, std::string> read_metadata(const json& value, const std::string& label) {
  const std::string where = label + ": __metadata__";
  check(value.is_object(), where, "must be a JSON object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& item : value.items()) {
    check(item.value().is_string(), where,
          "value of " + single_quoted(item.key()) + " is not a string");
    metadata.emplace(item.key(), item.value().get<std::string>());
  }
  return metadata;
}

// Two tensors must not share bytes. Sorted by begin, a range that overlaps any later range also
// overlaps its successor, so comparing neighbours is enough. Empty tensors own no bytes and may
// sit at any offset.
void check_no_overlap(const std::vector<SafetensorsEntry>& entries, const std::string& label) {
  std::vector<const SafetensorsEntry*> by_offset;
  for (const SafetensorsEntry& entry : entries) {
    if (entry.begin != entry.end) by_offset.push_back(&entry);
  }
  std::sort(
      by_offset.begin(), by_offset.end(),
      [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsEntry& previous = *by_offset[i - 1];
    const SafetensorsEntry& current = *by_offset[i];
    check(previous.end <= current.begin, label,
          "tensors " + single_quoted(previous.name) + " " +
              range_string(previous.begin, previous.end) + " and " + single_quoted(current.name) +
              " " + range_string(current.begin, current.end) + " overlap");
  }
}

void check_holds_length_prefix(std::uint64_t file_size, const std::string& label) {
  check(file_size >= kLengthPrefixBytes, label,
        "file is " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
}

// Owns a read-only mapping of a whole file; the tensors' keep_alive.
class Mapping {
 public:
  Mapping(void* address, std::size_t size) : address_(address), size_(size) {}
  ~Mapping() { ::munmap(address_, size_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  const std::uint8_t* bytes() const { return static_cast<const std::uint8_t*>(address_); }

 private:
  void* address_;
  std::size_t size_;
};

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  const InputFile file = InputFile::open(path);
  check_holds_length_prefix(file.size(), path);
  // The descriptor is closed on return; the mapping stays valid until munmap (POSIX).
  void* address = ::mmap(nullptr, file.size(), PROT_READ, MAP_PRIVATE, file.descriptor(), 0);
  check(address != MAP_FAILED, path, std::string("mmap failed: ") + std::strerror(errno));
  auto mapping = std::make_shared<const Mapping>(address, file.size());
  const std::uint8_t* bytes = mapping->bytes();
  return parse(std::move(mapping), bytes, file.size(), path);
}

SafetensorsFile SafetensorsFile::parse(std::shared_ptr<const void> keep_alive,
                                       const std::uint8_t* bytes, std::size_t size,
                                       const std::string& label) {
  check_holds_length_prefix(size, label);
  std::uint64_t header_bytes = 0;
  for (std::uint64_t i = 0; i < kLengthPrefixBytes; ++i) {
    header_bytes |= std::uint64_t{bytes[i]} << (8 * i);
  }
  check(header_bytes <= kMaxHeaderBytes, label,
        "header length " + std::to_string(header_bytes) + " is over the 100 MiB limit");
  check(header_bytes <= size - kLengthPrefixBytes, label,
        "header length " + std::to_string(header_bytes) + " runs past the end of the file (" +
            std::to_string(size) + " bytes)");

  SafetensorsFile file;
  file.label_ = label;
  file.keep_alive_ = std::move(keep_alive);
  file.data_section_offset_ = kLengthPrefixBytes + header_bytes;
  file.data_section_ = bytes + file.data_section_offset_;
  const std::uint64_t data_section_size = size - file.data_section_offset_;

  const std::string_view header_text(reinterpret_cast<const char*>(bytes + kLengthPrefixBytes),
                                     header_bytes);
  const json header = parse_json_refusing_duplicates(header_text, label, "header");
  check(header.is_object(), label, "header is not a JSON object");
  for (const auto& item : header.items()) {
    if (item.key() == "__metadata__") {
      file.metadata_ = read_metadata(item.value(), label);
    } else {
      file.entries_.push_back(read_entry(item.key(), item.value(), data_section_size, label));
    }
  }
  std::sort(file.entries_.begin(), file.entries_.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.name < b.name; });
  check_no_overlap(file.entries_, label);
  return file;
}

const SafetensorsEntry* find_entry(const std::vector<SafetensorsEntry>& entries,
                                   std::string_view name) {
  const auto found = std::lower_bound(
      entries.begin(), entries.end(), name,
      [](const SafetensorsEntry& entry, std::string_view key) { return entry.name < key; });
  if (found == entries.end() || found->name != name) return nullptr;
  return &*found;
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  return find_entry(entries_, name);
}

Tensor SafetensorsFile::tensor(std::string_view name) const {
  const SafetensorsEntry* entry = find(name);
  check(entry != nullptr, label_, "no tensor named " + single_quoted(name));
  const std::string where = label_ + ": tensor " + single_quoted(name);

  DType dtype = DType::F32;
  if (entry->dtype == "F16") {
    dtype = DType::F16;
  } else if (entry->dtype == "BF16") {
    dtype = DType::BF16;
  } else {
    check(entry->dtype == "F32", where,
          "dtype " + entry->dtype + " is not one attnscope computes with (F32, F16 or BF16)");
  }

  const std::uint8_t* data = data_section_ + entry->begin;
  const std::size_t alignment = dtype_size(dtype);
  check(reinterpret_cast<std::uintptr_t>(data) % alignment == 0, where,
        "data at file offset " + std::to_string(data_section_offset_ + entry->begin) +
            " is not aligned to " + std::to_string(alignment) +
            " bytes (the writer did not pad the header)");
  // The mapping is read-only: the view must never be written (a write would fault).
  return Tensor::borrow(const_cast<std::uint8_t*>(data), entry->shape, dtype, Device::CPU,
                        keep_alive_);
}

}  // namespace attnscope
