// NumPy's .npy format (version 1.0), for f32 arrays, so numpy (np.load) and anything built on it
// can read the logits and attention maps attnscope writes, and attnscope can read 2-D ones back.
//
// Layout (numpy's "NEP 1" format description):
//   bytes 0-5   magic "\x93NUMPY"
//   bytes 6-7   version 1, 0
//   bytes 8-9   HEADER_LEN, little-endian uint16
//   then        HEADER_LEN bytes of ASCII: a Python dict literal
//                 {'descr': '<f4', 'fortran_order': False, 'shape': (rows, cols), }
//               padded with spaces and ended by '\n' so that 10 + HEADER_LEN is a multiple of 64
//   then        rows * cols little-endian f32 values, row-major (C order).
// NpyWriter streams the rows of a 2-D array and writes the header last (128 bytes in all for any
// 2-D shape up to 20-digit dimensions), so it need not know the row count up front; write_npy
// writes an array of any rank whose values are all at hand.
#pragma once

#include <cstdint>
#include <fstream>
#include <ostream>
#include <span>
#include <string>

namespace attnscope {

class NpyWriter {
 public:
  // Creates `path` for rows of `cols` f32 values. Throws Error when it cannot be written.
  NpyWriter(const std::string& path, std::int64_t cols);
  // Appends one row (cols values).
  void append_row(std::span<const float> row);
  // Writes the header with the final shape [rows appended, cols] and closes the file.
  void finish();
  std::int64_t rows() const { return rows_; }

 private:
  std::string path_;
  std::ofstream out_;
  std::int64_t cols_ = 0;
  std::int64_t rows_ = 0;
};

class NpyReader {
 public:
  // Opens `path` and parses its header. Throws Error unless it is a version 1.0 .npy file of a
  // 2-D, C-order, little-endian f32 array whose data is all there.
  explicit NpyReader(const std::string& path);
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  // Reads the next row into `row` (cols values). Throws Error past the last row.
  void read_row(std::span<float> row);

 private:
  std::string path_;
  std::ifstream in_;
  std::int64_t rows_ = 0, cols_ = 0, rows_read_ = 0;
};

// The header dict of a little-endian f32 array, e.g. "{'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), }" (without padding); a 1-D shape is written "(3,)", as numpy does.
std::string npy_header_dict(std::span<const std::int64_t> shape);
std::string npy_header_dict(std::int64_t rows, std::int64_t cols);

// Writes the whole .npy file of an f32 array of `shape` (rank >= 1) holding `values` (C order,
// as many as the shape's product) to `out`. Throws Error when the counts disagree; the caller
// checks the stream (cli::write_output_file does).
void write_npy(std::ostream& out, std::span<const std::int64_t> shape,
               std::span<const float> values);

}  // namespace attnscope
