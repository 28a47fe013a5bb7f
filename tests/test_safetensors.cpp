// Tests of the safetensors reader: well-formed files round-trip their values (in memory and
// through mmap), and every kind of malformed file is refused with a one-line Error naming the
// file and the problem. Files are built in memory with SafetensorsWriter; cost: milliseconds.

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/safetensors.h"
#include "safetensors_writer.h"

namespace attnscope {
namespace {

using testing::bytes_of;
using testing::parse_safetensors;
using testing::SafetensorsWriter;
using testing::TempDir;

const std::string kFileLabel = "t.safetensors";

// The file: one header (any text) and `data_bytes` zero bytes of data section.
SafetensorsFile parse_header(std::string_view header, std::size_t data_bytes = 0) {
  return parse_safetensors(SafetensorsWriter::with_header(header, std::string(data_bytes, '\0')),
                           kFileLabel);
}

// A header with one entry "a" whose fields are given as JSON text.
std::string one_entry(std::string_view fields) { return "{\"a\":{" + std::string(fields) + "}}"; }

// The message of the Error thrown by parsing, or a note that none was thrown.
std::string parse_failure(std::string_view header, std::size_t data_bytes = 0) {
  try {
    parse_header(header, data_bytes);
  } catch (const Error& error) {
    return error.what();
  }
  return "(parsed without error)";
}

SafetensorsWriter several_dtypes() {
  SafetensorsWriter writer;
  writer.add_f32("wte.weight", {2, 3}, {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f});
  writer.add("h.0.ln_1.weight", "F16", {3},
             bytes_of(std::vector<std::uint16_t>{f32_to_f16(1.0f), f32_to_f16(-0.5f),
                                                 f32_to_f16(65504.0f)}));
  writer.add("h.0.ln_1.bias", "BF16", {2},
             bytes_of(std::vector<std::uint16_t>{f32_to_bf16(3.0f), f32_to_bf16(-128.0f)}));
  writer.add("attn.bias", "U8", {1, 1, 3}, bytes_of(std::vector<std::uint8_t>{1, 0, 1}));
  writer.add("position_ids", "I64", {3}, bytes_of(std::vector<std::int64_t>{0, 1, 2}));
  writer.add("empty", "F32", {0, 4}, "");
  writer.add_metadata("format", "pt");
  writer.add_metadata("note", "made by \"tests\"");
  return writer;
}

void check_several_dtypes(const SafetensorsFile& file) {
  std::vector<std::string> names;
  for (const SafetensorsEntry& entry : file.entries()) names.push_back(entry.name);
  CHECK(names == std::vector<std::string>{"attn.bias", "empty", "h.0.ln_1.bias", "h.0.ln_1.weight",
                                          "position_ids", "wte.weight"});
  CHECK(file.metadata() ==
        std::map<std::string, std::string>{{"format", "pt"}, {"note", "made by \"tests\""}});

  const Tensor wte = file.tensor("wte.weight");
  CHECK(wte.dtype() == DType::F32);
  CHECK(wte.device() == Device::CPU);
  CHECK(wte.shape() == Shape{2, 3});
  const float* w = wte.data<float>();
  CHECK(std::vector<float>(w, w + 6) == std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f});

  const Tensor ln_weight = file.tensor("h.0.ln_1.weight");
  CHECK(ln_weight.dtype() == DType::F16);
  CHECK(ln_weight.shape() == Shape{3});
  CHECK(f16_to_f32(ln_weight.data<std::uint16_t>()[0]) == 1.0f);
  CHECK(f16_to_f32(ln_weight.data<std::uint16_t>()[1]) == -0.5f);
  CHECK(f16_to_f32(ln_weight.data<std::uint16_t>()[2]) == 65504.0f);

  const Tensor ln_bias = file.tensor("h.0.ln_1.bias");
  CHECK(ln_bias.dtype() == DType::BF16);
  CHECK(bf16_to_f32(ln_bias.data<std::uint16_t>()[0]) == 3.0f);
  CHECK(bf16_to_f32(ln_bias.data<std::uint16_t>()[1]) == -128.0f);

  const Tensor empty = file.tensor("empty");
  CHECK(empty.shape() == Shape{0, 4});
  CHECK(empty.numel() == 0);

  const SafetensorsEntry* ids = file.find("position_ids");
  REQUIRE(ids != nullptr);
  CHECK(ids->dtype == "I64");
  CHECK(ids->shape == Shape{3});
  CHECK(ids->end - ids->begin == 24);
  CHECK(file.find("missing") == nullptr);
  CHECK(file.find("") == nullptr);
}

TEST_CASE("safetensors: a file of several dtypes round-trips through parse") {
  const SafetensorsFile file = parse_safetensors(several_dtypes().serialize(), kFileLabel);
  CHECK(file.label() == kFileLabel);
  check_several_dtypes(file);
}

TEST_CASE("safetensors: a file of several dtypes round-trips through open (mmap)") {
  const TempDir dir;
  const std::string path = dir.file("model.safetensors");
  testing::write_file(path, several_dtypes().serialize());
  const SafetensorsFile file = SafetensorsFile::open(path);
  CHECK(file.label() == path);
  check_several_dtypes(file);
}

TEST_CASE("safetensors: views keep the mapping alive after the file object and path are gone") {
  const TempDir dir;
  const std::string path = dir.file("model.safetensors");
  SafetensorsWriter writer;
  writer.add_f32("w", {4}, {1, 2, 3, 4});
  testing::write_file(path, writer.serialize());
  Tensor view;
  {
    const SafetensorsFile file = SafetensorsFile::open(path);
    view = file.tensor("w");
  }
  std::filesystem::remove(path);
  const float* values = view.data<float>();
  CHECK(std::vector<float>(values, values + 4) == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE(
    "safetensors: tensor() refuses missing names and dtypes attnscope does not compute with") {
  const SafetensorsFile file = parse_safetensors(several_dtypes().serialize(), kFileLabel);
  CHECK_THROWS_WITH_AS(file.tensor("nope"), "t.safetensors: no tensor named 'nope'", Error);
  CHECK_THROWS_WITH_AS(file.tensor("position_ids"),
                       "t.safetensors: tensor 'position_ids': dtype I64 is not one attnscope "
                       "computes with (F32, F16 or BF16)",
                       Error);
  CHECK_THROWS_WITH_AS(file.tensor("attn.bias"), doctest::Contains("dtype U8 is not one"), Error);
}

TEST_CASE("safetensors: every dtype of the format is accepted in entries") {
  const std::vector<std::pair<std::string, std::size_t>> dtypes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  SafetensorsWriter writer;
  for (const auto& [dtype, size] : dtypes)
    writer.add(dtype, dtype, {3}, std::string(3 * size, 'x'));
  const SafetensorsFile file = parse_safetensors(writer.serialize(), kFileLabel);
  CHECK(file.entries().size() == dtypes.size());
  for (const auto& [dtype, size] : dtypes) {
    const SafetensorsEntry* entry = file.find(dtype);
    REQUIRE(entry != nullptr);
    CHECK(entry->dtype == dtype);
    CHECK(entry->end - entry->begin == 3 * size);
  }
}

TEST_CASE("safetensors: empty headers, padding, trailing bytes and empty tensors are accepted") {
  CHECK(parse_header("{}").entries().empty());
  CHECK(parse_header("{}      ").entries().empty());
  CHECK(parse_header("{\"__metadata__\":{}}").metadata().empty());

  SafetensorsWriter writer;
  writer.add_f32("a", {2}, {1, 2});
  writer.add_trailing_bytes(100);
  CHECK(parse_safetensors(writer.serialize(), kFileLabel).entries().size() == 1);

  // Empty tensors own no bytes: they may share an offset with each other and with a tensor.
  const SafetensorsFile file =
      parse_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("b":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                   R"("c":{"dtype":"I64","shape":[3,0],"data_offsets":[4,4]},)"
                   R"("d":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})",
                   8);
  CHECK(file.entries().size() == 4);
}

TEST_CASE("safetensors: a scalar (shape []) holds one element") {
  SafetensorsWriter writer;
  writer.add_f32("s", {}, {2.5f});
  const Tensor scalar = parse_safetensors(writer.serialize(), kFileLabel).tensor("s");
  CHECK(scalar.shape().empty());
  CHECK(scalar.numel() == 1);
  CHECK(scalar.data<float>()[0] == 2.5f);
}

TEST_CASE("safetensors: open() refuses missing paths, directories and short files") {
  const TempDir dir;
  CHECK_THROWS_WITH_AS(SafetensorsFile::open(dir.file("absent.safetensors")),
                       (dir.file("absent.safetensors") + ": no such file").c_str(), Error);
  CHECK_THROWS_WITH_AS(SafetensorsFile::open(dir.path().string()),
                       (dir.path().string() + ": not a regular file").c_str(), Error);

  const std::string empty = dir.file("empty.safetensors");
  testing::write_file(empty, "");
  CHECK_THROWS_WITH_AS(
      SafetensorsFile::open(empty),
      (empty + ": file is 0 bytes, too short for the 8-byte header length").c_str(), Error);

  const std::string short_file = dir.file("short.safetensors");
  testing::write_file(short_file, "1234567");
  CHECK_THROWS_WITH_AS(SafetensorsFile::open(short_file),
                       doctest::Contains("file is 7 bytes, too short"), Error);
}

TEST_CASE("safetensors: parse() refuses a buffer shorter than the length prefix") {
  CHECK_THROWS_WITH_AS(parse_safetensors("", kFileLabel),
                       "t.safetensors: file is 0 bytes, too short for the 8-byte header length",
                       Error);
  CHECK_THROWS_WITH_AS(parse_safetensors(std::string("\x02\0\0\0", 4), kFileLabel),
                       doctest::Contains("file is 4 bytes"), Error);
}

TEST_CASE("safetensors: header lengths past the end of the file or absurdly large are refused") {
  CHECK_THROWS_WITH_AS(
      parse_safetensors(SafetensorsWriter::with_declared_length(3, "{}"), kFileLabel),
      "t.safetensors: header length 3 runs past the end of the file (10 bytes)", Error);
  CHECK_THROWS_WITH_AS(parse_safetensors(SafetensorsWriter::with_declared_length(1), kFileLabel),
                       doctest::Contains("header length 1 runs past the end"), Error);
  CHECK_THROWS_WITH_AS(
      parse_safetensors(SafetensorsWriter::with_declared_length(std::uint64_t{200} << 20, "{}"),
                        kFileLabel),
      "t.safetensors: header length 209715200 is over the 100 MiB limit", Error);
  // Near 2^64: 8 + N would wrap if the reader added before comparing.
  CHECK_THROWS_WITH_AS(
      parse_safetensors(SafetensorsWriter::with_declared_length(~std::uint64_t{0}, "{}"),
                        kFileLabel),
      doctest::Contains("is over the 100 MiB limit"), Error);
  CHECK_THROWS_WITH_AS(
      parse_safetensors(SafetensorsWriter::with_declared_length(~std::uint64_t{0} - 7, "{}"),
                        kFileLabel),
      doctest::Contains("is over the 100 MiB limit"), Error);
}

TEST_CASE("safetensors: headers that are not a valid JSON object are refused") {
  CHECK(parse_failure("") ==
        "t.safetensors: header is not valid JSON: parse error at line 1, "
        "column 1: syntax error while parsing value - unexpected end of "
        "input; expected '[', '{', or a literal");
  CHECK(parse_failure("{\"a\":").find("t.safetensors: header is not valid JSON: parse error at "
                                      "line 1, column 6") == 0);
  CHECK(parse_failure("{} {}").find("header is not valid JSON") != std::string::npos);
  CHECK(parse_failure("[]") == "t.safetensors: header is not a JSON object");
  CHECK(parse_failure("42") == "t.safetensors: header is not a JSON object");
  // nlohmann::json would stop at a NUL as if the text ended there.
  CHECK(parse_failure(std::string("{}\0", 3)) ==
        "t.safetensors: header is not valid JSON: NUL byte at header offset 2");
  CHECK(parse_failure(std::string("{\"a\0\":1}", 8)) ==
        "t.safetensors: header is not valid JSON: NUL byte at header offset 3");
  // JSON has no infinity; the parser refuses a literal beyond double's range.
  CHECK(parse_failure(one_entry(R"("dtype":"U8","shape":[1],"data_offsets":[0,1e999])"), 1) ==
        "t.safetensors: header is not valid JSON: number overflow parsing '1e999'");
  // A lone continuation byte and a truncated two-byte sequence inside a key.
  CHECK(parse_failure("{\"\x80\":{}}").find("header is not valid JSON") != std::string::npos);
  CHECK(parse_failure("{\"\xc3\":{}}").find("header is not valid JSON") != std::string::npos);
  // The message stays on one line.
  CHECK(parse_failure("{\n\n x").find('\n') == std::string::npos);
}

TEST_CASE("safetensors: duplicate keys are refused at every depth") {
  CHECK(parse_failure(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                      8) == "t.safetensors: header: duplicate key 'a'");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4])"),
                      4) == "t.safetensors: header: duplicate key 'dtype'");
  CHECK(parse_failure(R"({"__metadata__":{"k":"1","k":"2"}})") ==
        "t.safetensors: header: duplicate key 'k'");
  // The same key in sibling objects is not a duplicate.
  CHECK(parse_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                     R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                     8)
            .entries()
            .size() == 2);
}

TEST_CASE("safetensors: headers nested deeper than the JSON depth limit are refused") {
  // A million levels used to overflow the stack (the error path dumped the value).
  const std::string deep =
      "{\"a\":" + std::string(1'000'000, '[') + std::string(1'000'000, ']') + "}";
  CHECK(parse_failure(deep) ==
        "t.safetensors: header nests objects and arrays deeper than 64 levels");
  const std::string at_limit = "{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}";
  CHECK(parse_failure(at_limit) == "t.safetensors: tensor 'a': entry is not a JSON object");
  CHECK(parse_failure("{\"a\":" + std::string(64, '[') + std::string(64, ']') + "}") ==
        "t.safetensors: header nests objects and arrays deeper than 64 levels");
}

// Parsing is linear in the number of tensors: 100,000 entries took minutes before (the
// duplicate-key check walked the whole object once per entry), and take well under a second now.
TEST_CASE("safetensors: a header with 100,000 tensors parses in linear time" *
          doctest::timeout(60)) {
  constexpr int kTensors = 100'000;
  std::string header = "{";
  for (int i = 0; i < kTensors; ++i) {
    if (i > 0) header += ',';
    header += "\"t" + std::to_string(i) + "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" +
              std::to_string(i) + "," + std::to_string(i + 1) + "]}";
  }
  header += "}";
  const SafetensorsFile file = parse_header(header, kTensors);
  CHECK(file.entries().size() == kTensors);
  CHECK(file.find("t99999") != nullptr);
}

TEST_CASE("safetensors: a huge value is quoted in messages only as an excerpt") {
  const std::string message =
      parse_failure(one_entry("\"dtype\":\"F32\",\"shape\":[\"" + std::string(100'000, 'x') +
                              "\"],\"data_offsets\":[0,4]"),
                    4);
  CHECK(message.find("\"shape\" must hold non-negative integers, found \"xxx") !=
        std::string::npos);
  CHECK(message.size() < 200);
  CHECK(message.substr(message.size() - 3) == "...");
}

TEST_CASE("safetensors: entries must be objects with exactly dtype, shape and data_offsets") {
  CHECK(parse_failure(R"({"a":[1,2]})") == "t.safetensors: tensor 'a': entry is not a JSON object");
  CHECK(parse_failure(R"({"a":"F32"})") == "t.safetensors: tensor 'a': entry is not a JSON object");
  CHECK(parse_failure(one_entry(R"("shape":[1],"data_offsets":[0,4])"), 4) ==
        "t.safetensors: tensor 'a': missing \"dtype\"");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","data_offsets":[0,4])"), 4) ==
        "t.safetensors: tensor 'a': missing \"shape\"");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1])"), 4) ==
        "t.safetensors: tensor 'a': missing \"data_offsets\"");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1)"), 4) ==
        "t.safetensors: tensor 'a': unknown field 'x'");
  CHECK(parse_failure(one_entry(R"("dtype":32,"shape":[1],"data_offsets":[0,4])"), 4) ==
        "t.safetensors: tensor 'a': \"dtype\" must be a string");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":1,"data_offsets":[0,4])"), 4) ==
        "t.safetensors: tensor 'a': \"shape\" must be an array of integers");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":{},"data_offsets":[0,4])"), 4) ==
        "t.safetensors: tensor 'a': \"shape\" must be an array of integers");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":"0,4")"), 4) ==
        "t.safetensors: tensor 'a': \"data_offsets\" must be an array of two integers");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4,8])"), 8) ==
        "t.safetensors: tensor 'a': \"data_offsets\" must be an array of two integers");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":[0])"), 4) ==
        "t.safetensors: tensor 'a': \"data_offsets\" must be an array of two integers");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":[-4,0])"), 4) ==
        "t.safetensors: tensor 'a': \"data_offsets\" must hold non-negative integers, found "
        "[-4,0]");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":[0,4.0])"), 4) ==
        "t.safetensors: tensor 'a': \"data_offsets\" must hold non-negative integers, found "
        "[0,4.0]");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":[null,4])"), 4)
            .find("\"data_offsets\" must hold non-negative integers") != std::string::npos);
}

TEST_CASE("safetensors: names in messages are quoted on one line") {
  CHECK(parse_failure(R"({"bad\nname":[]})") ==
        "t.safetensors: tensor 'bad\\x0aname': entry is not a JSON object");
}

TEST_CASE("safetensors: unknown dtype names are refused") {
  CHECK(parse_failure(one_entry(R"("dtype":"F128","shape":[1],"data_offsets":[0,16])"), 16) ==
        "t.safetensors: tensor 'a': unknown dtype 'F128'");
  CHECK(parse_failure(one_entry(R"("dtype":"f32","shape":[1],"data_offsets":[0,4])"), 4) ==
        "t.safetensors: tensor 'a': unknown dtype 'f32'");
}

TEST_CASE("safetensors: negative and non-integer dimensions are refused") {
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[2,-1],"data_offsets":[0,0])")) ==
        "t.safetensors: tensor 'a': \"shape\" must hold non-negative integers, found -1");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[2.5],"data_offsets":[0,0])")) ==
        "t.safetensors: tensor 'a': \"shape\" must hold non-negative integers, found 2.5");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":["2"],"data_offsets":[0,8])"), 8) ==
        "t.safetensors: tensor 'a': \"shape\" must hold non-negative integers, found \"2\"");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[true],"data_offsets":[0,4])"), 4) ==
        "t.safetensors: tensor 'a': \"shape\" must hold non-negative integers, found true");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[[1]],"data_offsets":[0,4])"), 4) ==
        "t.safetensors: tensor 'a': \"shape\" must hold non-negative integers, found [1]");
  CHECK(parse_failure(
            one_entry(R"("dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0])")) ==
        "t.safetensors: tensor 'a': dimension 9223372036854775808 is too large");
}

TEST_CASE("safetensors: shapes whose element or byte counts overflow are refused") {
  // 2^62 x 4 elements overflow int64.
  CHECK(parse_failure(
            one_entry(R"("dtype":"U8","shape":[4611686018427387904,4],"data_offsets":[0,0])")) ==
        "t.safetensors: tensor 'a': shape: element count of [4611686018427387904, 4] overflows");
  // 2^61 elements fit, but 2^61 x 8 bytes overflow u64.
  CHECK(parse_failure(
            one_entry(R"("dtype":"F64","shape":[2305843009213693952,1],"data_offsets":[0,0])")) ==
        "t.safetensors: tensor 'a': shape [2305843009213693952, 1] of F64 overflows a byte count");
  // 2^60 x 8 bytes = 2^63 does not overflow, and is then refused as a wrong size.
  CHECK(parse_failure(
            one_entry(R"("dtype":"F64","shape":[1152921504606846976],"data_offsets":[0,0])"))
            .find("needs 9223372036854775808") != std::string::npos);
}

TEST_CASE("safetensors: data_offsets must be ordered, inside the data section and sized right") {
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":[8,4])"), 8) ==
        "t.safetensors: tensor 'a': data_offsets [8, 4]: begin is after end");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[1],"data_offsets":[4,8])"), 7) ==
        "t.safetensors: tensor 'a': data_offsets [4, 8] run past the end of the data section "
        "(7 bytes)");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[10,4],"data_offsets":[0,100])"), 200) ==
        "t.safetensors: tensor 'a': data_offsets [0, 100] hold 100 bytes but shape [10, 4] of F32 "
        "needs 160");
  CHECK(parse_failure(one_entry(R"("dtype":"BF16","shape":[3],"data_offsets":[0,8])"), 8) ==
        "t.safetensors: tensor 'a': data_offsets [0, 8] hold 8 bytes but shape [3] of BF16 "
        "needs 6");
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[0],"data_offsets":[0,4])"), 4)
            .find("hold 4 bytes but shape [0] of F32 needs 0") != std::string::npos);
}

TEST_CASE("safetensors: offsets near and above 2^64 do not wrap") {
  CHECK(parse_failure(one_entry(R"("dtype":"F32","shape":[0],)"
                                R"("data_offsets":[18446744073709551615,18446744073709551615])"),
                      8)
            .find("run past the end of the data section (8 bytes)") != std::string::npos);
  CHECK(parse_failure(
            one_entry(R"("dtype":"U8","shape":[1],"data_offsets":[18446744073709551615,0])"), 8)
            .find("begin is after end") != std::string::npos);
  CHECK(parse_failure(
            one_entry(R"("dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551615])"), 8)
            .find("run past the end") != std::string::npos);
  // 2^64 itself is no u64: the JSON parser makes it a float, which is refused.
  CHECK(parse_failure(
            one_entry(R"("dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616])"), 8)
            .find("must hold non-negative integers") != std::string::npos);
}

TEST_CASE("safetensors: overlapping byte ranges are refused") {
  CHECK(parse_failure(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                      12) == "t.safetensors: tensors 'a' [0, 8] and 'b' [4, 12] overlap");
  // Same range twice.
  CHECK(parse_failure(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                      R"("b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})",
                      4) == "t.safetensors: tensors 'a' [0, 4] and 'b' [0, 4] overlap");
  // A range nested inside a larger one, listed in an order where names and offsets disagree.
  CHECK(parse_failure(R"({"z":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},)"
                      R"("m":{"dtype":"U8","shape":[4],"data_offsets":[20,24]},)"
                      R"("a":{"dtype":"U8","shape":[2],"data_offsets":[8,10]}})",
                      24) == "t.safetensors: tensors 'z' [0, 16] and 'a' [8, 10] overlap");
}

TEST_CASE("safetensors: __metadata__ must map strings to strings") {
  CHECK(parse_failure(R"({"__metadata__":{"format":"pt","step":3}})") ==
        "t.safetensors: __metadata__: value of 'step' is not a string");
  CHECK(parse_failure(R"({"__metadata__":{"nested":{}}})") ==
        "t.safetensors: __metadata__: value of 'nested' is not a string");
  CHECK(parse_failure(R"({"__metadata__":["pt"]})") ==
        "t.safetensors: __metadata__: must be a JSON object of strings");
  CHECK(parse_failure(R"({"__metadata__":null})") ==
        "t.safetensors: __metadata__: must be a JSON object of strings");
}

TEST_CASE("safetensors: tensor() refuses a view that is not aligned to its element size") {
  SafetensorsWriter writer;
  writer.add_f32("w", {2}, {1, 2});
  writer.add("b", "U8", {1}, "x");
  // One more space makes the data section start at 8 + N with N % 8 == 1.
  const std::string header = writer.header_json() + " ";
  const TempDir dir;
  const std::string path = dir.file("unaligned.safetensors");
  testing::write_file(path, SafetensorsWriter::with_header(header, writer.data()));

  const SafetensorsFile file = SafetensorsFile::open(path);
  CHECK_THROWS_WITH_AS(
      file.tensor("w"),
      (path + ": tensor 'w': data at file offset " + std::to_string(8 + header.size()) +
       " is not aligned to 4 bytes (the writer did not pad the header)")
          .c_str(),
      Error);
  CHECK_THROWS_WITH_AS(file.tensor("b"), doctest::Contains("dtype U8 is not one"), Error);
}

TEST_CASE("safetensors: the writer aligns each tensor to its element size") {
  SafetensorsWriter writer;
  writer.add("flag", "U8", {3}, "abc");
  writer.add_f32("w", {1}, {5.0f});
  writer.add("h", "F16", {1}, bytes_of(std::vector<std::uint16_t>{f32_to_f16(2.0f)}));
  writer.add("d", "F64", {1}, bytes_of(std::vector<double>{1.0}));
  const SafetensorsFile file = parse_safetensors(writer.serialize(), kFileLabel);
  CHECK(file.find("w")->begin == 4);
  CHECK(file.find("h")->begin == 8);
  CHECK(file.find("d")->begin == 16);
  CHECK(file.tensor("w").data<float>()[0] == 5.0f);
  CHECK(f16_to_f32(file.tensor("h").data<std::uint16_t>()[0]) == 2.0f);
}

}  // namespace
}  // namespace attnscope
