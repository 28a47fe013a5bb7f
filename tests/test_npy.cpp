// runtime/npy.h: the files are checked byte by byte against the NPY 1.0 format description
// (magic, version, little-endian HEADER_LEN, a dict padded with spaces to a multiple of 64 and
// ended by '\n', then raw little-endian f32), and read back.
#include <doctest/doctest.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "runtime/error.h"
#include "runtime/npy.h"
#include "safetensors_writer.h"

using namespace attnscope;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("NpyWriter writes a version 1.0 header that the format description accepts") {
  testing::TempDir dir;
  const std::string path = dir.file("a.npy");
  NpyWriter writer(path, 3);
  writer.append_row(std::vector<float>{1.0f, 2.0f, 3.0f});
  writer.append_row(std::vector<float>{-4.0f, 0.5f, 1e-30f});
  writer.finish();

  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() > 10);
  CHECK(bytes.substr(0, 6) == "\x93NUMPY");
  CHECK(bytes[6] == 1);
  CHECK(bytes[7] == 0);
  const std::size_t header_len =
      static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  CHECK((10 + header_len) % 64 == 0);
  const std::string header = bytes.substr(10, header_len);
  CHECK(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
  CHECK(header.back() == '\n');
  CHECK(header.find_first_not_of(' ', header.find('}') + 1) == header_len - 1);
  REQUIRE(bytes.size() == 10 + header_len + 6 * sizeof(float));
  float values[6];
  std::memcpy(values, bytes.data() + 10 + header_len, sizeof(values));
  CHECK(values[0] == 1.0f);
  CHECK(values[5] == 1e-30f);

  NpyReader reader(path);
  CHECK(reader.rows() == 2);
  CHECK(reader.cols() == 3);
  std::vector<float> row(3);
  reader.read_row(row);
  reader.read_row(row);
  CHECK(row == std::vector<float>{-4.0f, 0.5f, 1e-30f});
  CHECK_THROWS_AS(reader.read_row(row), Error);
}

TEST_CASE("NpyReader reads numpy's own padding and refuses what it cannot read") {
  testing::TempDir dir;
  // A header as numpy writes it for shape (1, 2) (padded so that 10 + HEADER_LEN = 128), with
  // the keys spaced differently from attnscope's writer.
  std::string dict = "{'descr':'<f4','fortran_order':False,'shape':(1,2)}";
  dict.resize(127 - 10, ' ');
  dict += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' +
                     dict + std::string(8, '\0');
  testing::write_file(dir.file("numpy.npy"), file);
  NpyReader reader(dir.file("numpy.npy"));
  CHECK(reader.rows() == 1);
  CHECK(reader.cols() == 2);

  testing::write_file(dir.file("short.npy"), file.substr(0, file.size() - 1));
  CHECK_THROWS_WITH_AS(NpyReader(dir.file("short.npy")), doctest::Contains("file size"), Error);
  std::string f64 = file;
  f64.replace(f64.find("<f4"), 3, "<f8");
  testing::write_file(dir.file("f64.npy"), f64);
  CHECK_THROWS_WITH_AS(NpyReader(dir.file("f64.npy")), doctest::Contains("float32"), Error);
  testing::write_file(dir.file("text.npy"), "hello, not numpy");
  CHECK_THROWS_WITH_AS(NpyReader(dir.file("text.npy")), doctest::Contains("magic"), Error);
  CHECK_THROWS_AS(NpyReader(dir.file("missing.npy")), Error);
  // A shape whose byte count overflows 64 bits must not wrap to the file's size (2^62 x 2^2
  // floats is 2^66 bytes, 0 modulo 2^64, beside an empty data section).
  std::string huge_dict = "{'descr':'<f4','fortran_order':False,'shape':(4611686018427387904,4)}";
  huge_dict.resize(127 - 10, ' ');
  huge_dict += '\n';
  testing::write_file(
      dir.file("huge.npy"),
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(huge_dict.size()) + '\0' + huge_dict);
  CHECK_THROWS_WITH_AS(NpyReader(dir.file("huge.npy")), doctest::Contains("file size"), Error);
  CHECK_THROWS_WITH_AS(NpyReader(dir.path().string()), doctest::Contains("not a regular file"),
                       Error);
}

TEST_CASE("write_npy writes an array of any rank with numpy's header") {
  std::ostringstream out;
  const std::int64_t shape[] = {2, 1, 3, 2};
  const std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  write_npy(out, shape, values);
  const std::string bytes = out.str();
  const std::size_t header_len =
      static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  CHECK((10 + header_len) % 64 == 0);
  const std::string header = bytes.substr(10, header_len);
  CHECK(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 3, 2), }"));
  CHECK(header.back() == '\n');
  REQUIRE(bytes.size() == 10 + header_len + values.size() * sizeof(float));
  float last = 0;
  std::memcpy(&last, bytes.data() + bytes.size() - sizeof(float), sizeof(float));
  CHECK(last == 12.0f);

  const std::int64_t one_dim[] = {3};
  CHECK(npy_header_dict(one_dim).find("'shape': (3,)") != std::string::npos);
  std::ostringstream short_out;
  CHECK_THROWS_AS(write_npy(short_out, shape, std::span(values).first(11)), Error);
}
