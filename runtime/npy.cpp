// The .npy writer and reader (runtime/npy.h).
#include "runtime/npy.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/tensor.h"

namespace attnscope {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kPreamble = 10;   // magic, version, HEADER_LEN
constexpr std::size_t kAlignment = 64;  // preamble + header: a multiple of 64

static_assert(std::endian::native == std::endian::little,
              "the .npy files hold little-endian f32 ('<f4') written as raw bytes");

// The preamble and the header for an array of `shape`, padded with spaces to the next multiple
// of 64 bytes (128 for every 2-D shape: its dict is 59 to 97 characters, so NpyWriter's rewritten
// header keeps its length).
std::string npy_header(std::span<const std::int64_t> shape) {
  std::string dict = npy_header_dict(shape);
  const std::size_t total =
      (kPreamble + dict.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
  const std::size_t header_len = total - kPreamble;
  dict.resize(header_len - 1, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header_len & 0xff);
  out += static_cast<char>(header_len >> 8);
  return out + dict;
}

// The text after `key` in the header dict, up to (not including) the first of `ends`.
std::string dict_value(const std::string& dict, const std::string& key, const std::string& ends,
                       const std::string& path) {
  const std::size_t at = dict.find("'" + key + "':");
  check(at != std::string::npos, path, "not a .npy header: no '" + key + "' key");
  std::size_t begin = at + key.size() + 3;
  while (begin < dict.size() && dict[begin] == ' ') ++begin;
  const std::size_t end = dict.find_first_of(ends, begin);
  check(end != std::string::npos, path, "not a .npy header: bad '" + key + "' value");
  return dict.substr(begin, end - begin);
}

std::int64_t parse_dimension(const std::string& text, const std::string& path) {
  std::size_t used = 0;
  long long value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  check(used > 0 && value >= 0, path, "not a .npy header: bad shape");
  return value;
}

}  // namespace

std::string npy_header_dict(std::span<const std::int64_t> shape) {
  std::string dims;
  for (std::int64_t dim : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(dim);
  if (shape.size() == 1) dims += ",";
  return "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
}

std::string npy_header_dict(std::int64_t rows, std::int64_t cols) {
  const std::int64_t shape[] = {rows, cols};
  return npy_header_dict(shape);
}

void write_npy(std::ostream& out, std::span<const std::int64_t> shape,
               std::span<const float> values) {
  check(!shape.empty(), "npy", "an array needs at least one dimension");
  const std::int64_t count = checked_numel(shape);
  check(count == static_cast<std::int64_t>(values.size()), "npy", [&] {
    return std::to_string(values.size()) + " values do not fill a shape of " +
           std::to_string(count);
  });
  out << npy_header(shape);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size_bytes()));
}

NpyWriter::NpyWriter(const std::string& path, std::int64_t cols)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc), cols_(cols) {
  check(out_.good(), path, "cannot be written");
  check(cols > 0, path, "rows must hold at least one value");
  const std::int64_t shape[] = {0, cols};
  out_ << npy_header(shape);  // rewritten by finish() with the final row count
}

void NpyWriter::append_row(std::span<const float> row) {
  check(static_cast<std::int64_t>(row.size()) == cols_, path_,
        "a row of " + std::to_string(row.size()) + " values, expected " + std::to_string(cols_));
  out_.write(reinterpret_cast<const char*>(row.data()),
             static_cast<std::streamsize>(row.size_bytes()));
  check(out_.good(), path_, "write failed");
  ++rows_;
}

void NpyWriter::finish() {
  out_.seekp(0);
  const std::int64_t shape[] = {rows_, cols_};
  out_ << npy_header(shape);
  out_.close();
  check(!out_.fail(), path_, "write failed");
}

NpyReader::NpyReader(const std::string& path) : path_(path) {
  const std::uint64_t file_size = InputFile::open(path).size();  // a regular file, or refused
  in_.open(path, std::ios::binary);
  check(in_.good(), path, "cannot be read");
  char preamble[kPreamble] = {};
  in_.read(preamble, kPreamble);
  check(in_.good() && std::string_view(preamble, kMagic.size()) == kMagic, path,
        "not a .npy file (no \\x93NUMPY magic)");
  check(preamble[6] == 1 && preamble[7] == 0, path, "only .npy version 1.0 is read");
  const std::size_t header_len = static_cast<unsigned char>(preamble[8]) |
                                 static_cast<std::size_t>(static_cast<unsigned char>(preamble[9]))
                                     << 8;
  std::string dict(header_len, '\0');
  in_.read(dict.data(), static_cast<std::streamsize>(header_len));
  check(in_.good(), path, "truncated .npy header");
  check(dict_value(dict, "descr", ",}", path) == "'<f4'", path,
        "the array must be little-endian float32 ('<f4')");
  check(dict_value(dict, "fortran_order", ",}", path) == "False", path,
        "the array must be in C order (fortran_order False)");
  const std::string shape = dict_value(dict, "shape", ")", path);
  const std::size_t comma = shape.find(',');
  check(shape.starts_with("(") && comma != std::string::npos, path,
        "the array must be 2-D, shape (rows, cols)");
  rows_ = parse_dimension(shape.substr(1, comma - 1), path);
  cols_ = parse_dimension(shape.substr(comma + 1), path);
  // rows x cols == the floats after the header, compared by division: the product may overflow.
  const std::uint64_t data_bytes = file_size - (kPreamble + header_len);  // the header was read
  const std::uint64_t floats = data_bytes / sizeof(float);
  const auto rows = static_cast<std::uint64_t>(rows_), cols = static_cast<std::uint64_t>(cols_);
  const bool size_matches =
      data_bytes % sizeof(float) == 0 &&
      (rows == 0 || cols == 0 ? floats == 0 : floats % rows == 0 && floats / rows == cols);
  check(size_matches, path, "the file size does not match the shape in its header");
}

void NpyReader::read_row(std::span<float> row) {
  check(rows_read_ < rows_, path_, "read past the last row");
  check(static_cast<std::int64_t>(row.size()) == cols_, path_, "row length mismatch");
  in_.read(reinterpret_cast<char*>(row.data()), static_cast<std::streamsize>(row.size_bytes()));
  check(in_.good(), path_, "truncated data");
  ++rows_read_;
}

}  // namespace attnscope
