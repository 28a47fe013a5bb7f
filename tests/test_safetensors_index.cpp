// Tests of sharded safetensors checkpoints (runtime/safetensors_index.h): an index and its shards,
// written with SafetensorsWriter into a temporary folder, load as one checkpoint; every kind of
// broken index is refused with a one-line Error naming the file and the problem.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/safetensors_index.h"
#include "safetensors_writer.h"

namespace attnscope {
namespace {

using testing::SafetensorsWriter;
using testing::TempDir;

// Two shards: a.safetensors holds "x" and "y", b.safetensors holds "z" (and "extra" when asked).
void write_shards(const TempDir& dir, bool extra_in_b = false) {
  SafetensorsWriter a;
  a.add_f32("x", {2}, {1.0f, 2.0f});
  a.add_f32("y", {1, 3}, {3.0f, 4.0f, 5.0f});
  testing::write_file(dir.file("a.safetensors"), a.serialize());
  SafetensorsWriter b;
  b.add_f32("z", {1}, {6.0f});
  if (extra_in_b) b.add_f32("extra", {1}, {7.0f});
  testing::write_file(dir.file("b.safetensors"), b.serialize());
}

const std::string kIndex =
    R"({"metadata": {"total_size": 24}, "weight_map": {"x": "a.safetensors", "y": "a.safetensors",
        "z": "b.safetensors"}})";

// The error of opening `index_text` against the shards in `dir`, or "opened".
std::string index_failure(const TempDir& dir, const std::string& index_text) {
  try {
    SafetensorsCheckpoint::open_index(index_text, dir.path().string(), "index.json");
  } catch (const Error& error) {
    return error.what();
  }
  return "opened";
}

TEST_CASE("safetensors index: the shards load as one checkpoint, each tensor from its shard") {
  const TempDir dir;
  write_shards(dir);
  const std::string index_path = dir.file("model.safetensors.index.json");
  testing::write_file(index_path, kIndex);
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(index_path);
  CHECK(checkpoint.label() == index_path);
  CHECK(checkpoint.shard_count() == 2);
  REQUIRE(checkpoint.entries().size() == 3);
  CHECK(checkpoint.entries()[0].name == "x");
  CHECK(checkpoint.entries()[2].name == "z");
  CHECK(checkpoint.find("w") == nullptr);
  CHECK(checkpoint.find("y")->shape == Shape{1, 3});
  CHECK(checkpoint.tensor("y").data<float>()[2] == 5.0f);
  CHECK(checkpoint.tensor("z").data<float>()[0] == 6.0f);
  CHECK_THROWS_WITH_AS(checkpoint.tensor("w"), (index_path + ": no tensor named 'w'").c_str(),
                       Error);

  // A single file is a checkpoint of one shard.
  const SafetensorsCheckpoint single = SafetensorsCheckpoint::open(dir.file("a.safetensors"));
  CHECK(single.shard_count() == 1);
  CHECK(single.entries().size() == 2);
  CHECK(single.tensor("x").data<float>()[1] == 2.0f);
}

TEST_CASE("safetensors index: broken indexes are refused with one line") {
  const TempDir dir;
  write_shards(dir);
  CHECK(index_failure(dir, kIndex) == "opened");
  CHECK(index_failure(dir, "{\"weight_map\": {\"x\": \"a.safetensors\",}}")
            .starts_with("index.json: index is not valid JSON: parse error at line 1"));
  CHECK(index_failure(dir, "[]") == "index.json: index is not a JSON object");
  CHECK(index_failure(dir, "{\"metadata\": {}}") ==
        "index.json: index has no \"weight_map\" object");
  CHECK(index_failure(dir, "{\"weight_map\": {}}") == "index.json: weight_map is empty");
  CHECK(index_failure(dir, R"({"weight_map": {"x": 1}})") ==
        "index.json: weight_map: the shard of 'x' is not a string");
  // A tensor listed twice (for two shards) is a duplicate key.
  CHECK(index_failure(dir, R"({"weight_map": {"x": "a.safetensors", "x": "b.safetensors"}})") ==
        "index.json: index: duplicate key 'x'");
  CHECK(index_failure(dir, R"({"weight_map": {"x": "../a.safetensors"}})") ==
        "index.json: weight_map: tensor 'x' names shard '../a.safetensors', not a file name in "
        "the index's folder");
  // a.safetensors exists: a NUL would make the system open it, so the name is refused, shown
  // escaped in full.
  CHECK(index_failure(dir, R"({"weight_map": {"x": "a.safetensors\u0000.evil"}})") ==
        "index.json: weight_map: tensor 'x' names shard 'a.safetensors\\x00.evil', not a file "
        "name in the index's folder");
  CHECK(index_failure(dir, R"({"weight_map": {"x": "c.safetensors"}})") ==
        "index.json: shard 'c.safetensors' is missing from " + dir.path().string());
  // A shard's tensor the index does not list, or lists under another shard.
  CHECK(index_failure(dir, R"({"weight_map": {"x": "a.safetensors", "z": "b.safetensors"}})") ==
        dir.file("a.safetensors") + ": tensor 'y' is not listed in the index");
  CHECK(index_failure(dir, R"({"weight_map": {"x": "a.safetensors", "y": "b.safetensors",
                               "z": "b.safetensors"}})") ==
        dir.file("a.safetensors") +
            ": tensor 'y' is listed in the index under shard "
            "'b.safetensors'");
  // A listed tensor its shard does not hold.
  CHECK(index_failure(dir, R"({"weight_map": {"x": "a.safetensors", "y": "a.safetensors",
                               "z": "b.safetensors", "w": "b.safetensors"}})") ==
        "index.json: tensor 'w' is listed in shard 'b.safetensors', which does not hold it");
}

TEST_CASE("safetensors index: a tensor present in two shards is refused") {
  const TempDir dir;
  write_shards(dir, true);
  SafetensorsWriter a;
  a.add_f32("x", {2}, {1.0f, 2.0f});
  a.add_f32("y", {1, 3}, {3.0f, 4.0f, 5.0f});
  a.add_f32("extra", {1}, {7.0f});
  testing::write_file(dir.file("a.safetensors"), a.serialize());
  CHECK(index_failure(dir, R"({"weight_map": {"x": "a.safetensors", "y": "a.safetensors",
                               "z": "b.safetensors", "extra": "a.safetensors"}})") ==
        dir.file("b.safetensors") +
            ": tensor 'extra' is listed in the index under shard "
            "'a.safetensors'");
  // A broken shard is reported by the shard reader, naming the shard.
  write_shards(dir);
  testing::write_file(dir.file("b.safetensors"), "1234567");
  CHECK(index_failure(dir, kIndex).starts_with(dir.file("b.safetensors") + ": file is 7 bytes"));
}

}  // namespace
}  // namespace attnscope
