// Tests of the one opener of input files (runtime/input_file.h): what is not a regular file is
// refused without blocking (a FIFO with no writer used to hang the loaders forever), files read
// whole respect their size cap, and a model folder's files follow the symlink policy.
// Cost: milliseconds.

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "models/checkpoint.h"
#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/safetensors_index.h"
#include "safetensors_writer.h"

namespace attnscope {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

TEST_CASE("input files: FIFOs, directories and devices are refused without blocking" *
          doctest::timeout(10)) {
  const TempDir dir;
  const std::string fifo = dir.file("model.safetensors");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(InputFile::open(fifo), (fifo + ": not a regular file").c_str(), Error);
  CHECK_THROWS_WITH_AS(SafetensorsCheckpoint::open(fifo), (fifo + ": not a regular file").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(read_input_file(dir.path(), kMaxConfigBytes, "a config"),
                       (dir.path().string() + ": not a regular file").c_str(), Error);
  CHECK_THROWS_WITH_AS(InputFile::open("/dev/null"), "/dev/null: not a regular file", Error);
  CHECK_THROWS_WITH_AS(InputFile::open(dir.file("absent.json")),
                       (dir.file("absent.json") + ": no such file").c_str(), Error);
}

TEST_CASE("input files: a file read whole is refused above its cap, before it is read") {
  const TempDir dir;
  const fs::path path = dir.file("config.json");
  write_text(path, std::string(2000, ' ') + "{}");
  CHECK(read_input_file(path, 2002, "a config") == std::string(2000, ' ') + "{}");
  CHECK_THROWS_WITH_AS(
      read_input_file(path, std::uint64_t{1} << 10, "a config"),
      (path.string() + ": file is 2002 bytes, over the 0 MiB limit for a config").c_str(), Error);
  // A sparse file of 1 GiB: refused from its size, no byte of it read.
  const fs::path huge = dir.file("tokenizer.json");
  write_text(huge, "");
  fs::resize_file(huge, std::uint64_t{1} << 30);
  CHECK_THROWS_WITH_AS(
      read_input_file(huge, kMaxTokenizerBytes, "a tokenizer file"),
      (huge.string() + ": file is 1073741824 bytes, over the 256 MiB limit for a tokenizer file")
          .c_str(),
      Error);
}

TEST_CASE("input files: a model folder's files may link inside it, or into a Hugging Face cache") {
  const TempDir dir;
  // Inside the folder: a link to a file beside it, or in a subfolder.
  const fs::path model = dir.path() / "model";
  write_text(model / "weights" / "real.safetensors", "x");
  fs::create_symlink("weights/real.safetensors", model / "model.safetensors");
  CHECK(model_folder_file(model, "model.safetensors") == model / "model.safetensors");
  CHECK(model_folder_file(model, "absent.json") == model / "absent.json");  // the opener says so

  // Out of the folder: refused, whether the link is relative or absolute.
  write_text(dir.path() / "secret.txt", "{}");
  fs::create_symlink("../secret.txt", model / "config.json");
  CHECK_THROWS_WITH_AS(
      model_folder_file(model, "config.json"),
      ((model / "config.json").string() + ": is a symlink to " +
       fs::canonical(dir.path() / "secret.txt").string() +
       ", outside the model folder (attnscope follows links only within it or into a Hugging "
       "Face cache's blobs)")
          .c_str(),
      Error);
  fs::create_symlink(fs::canonical(dir.path() / "secret.txt"), model / "tokenizer.json");
  CHECK_THROWS_AS(model_folder_file(model, "tokenizer.json"), Error);

  // The hub client's layout: snapshots/<revision>/<name> -> ../../blobs/<hash>.
  const fs::path entry = dir.path() / "hub" / "models--openai-community--gpt2";
  write_text(entry / "blobs" / "10c66461e4c109", "{}");
  const fs::path snapshot = entry / "snapshots" / "607a30d783dfa663caf39e06633721c8d4cfcd7e";
  fs::create_directories(snapshot);
  fs::create_symlink("../../blobs/10c66461e4c109", snapshot / "config.json");
  CHECK(model_folder_file(snapshot, "config.json") == snapshot / "config.json");
  // ... but not out of the cache entry, nor from a folder that only looks like a snapshot.
  fs::create_symlink("../../../../secret.txt", snapshot / "vocab.json");
  CHECK_THROWS_AS(model_folder_file(snapshot, "vocab.json"), Error);
  const fs::path lookalike = dir.path() / "snapshots" / "rev";
  fs::create_directories(lookalike);
  fs::create_symlink(fs::canonical(entry / "blobs" / "10c66461e4c109"), lookalike / "config.json");
  CHECK_THROWS_AS(model_folder_file(lookalike, "config.json"), Error);
}

TEST_CASE("input files: a model folder's weights may not link out of it") {
  const TempDir dir;
  const fs::path model = dir.path() / "model";
  fs::create_directories(model);
  write_text(dir.path() / "elsewhere.safetensors", "x");
  fs::create_symlink("../elsewhere.safetensors", model / "model.safetensors");
  CHECK_THROWS_WITH_AS(find_checkpoint(model), doctest::Contains("outside the model folder"),
                       Error);
}

TEST_CASE("input files: a sharded checkpoint's shard may not link out of the index's folder") {
  const TempDir dir;
  const fs::path model = dir.path() / "model";
  testing::SafetensorsWriter writer;
  writer.add_f32("a", {1}, {1.0f});
  testing::write_file(dir.file("elsewhere.safetensors"), writer.serialize());
  write_text(model / "model.safetensors.index.json",
             R"({"weight_map":{"a":"model-00001-of-00001.safetensors"}})");
  fs::create_symlink("../elsewhere.safetensors", model / "model-00001-of-00001.safetensors");
  CHECK_THROWS_WITH_AS(
      SafetensorsCheckpoint::open((model / "model.safetensors.index.json").string()),
      doctest::Contains("outside the model folder"), Error);
}

}  // namespace
}  // namespace attnscope
